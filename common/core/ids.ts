/**
 * Every name the lab derives from a run, in one place, usable in workflow code, and the one rule for every id that
 * becomes a path segment (a run's results folder, a host's folder, a backup store's folder): whatever a client sends
 * as a workflow id or an input field, it can never name `.`, `..`, a folder below another, or the history's folder,
 * and two runs never get one name:
 * - run folders (results, backup stores, S3 prefixes) are the run id escaped injectively (runFolderName);
 * - host ids carry a 130-bit tag of SHA-256 of the run id (runTag): finding two runs with one tag is infeasible;
 * - a local host's folder (its socket path must stay under 107 bytes) is its host id's hash cut to 80 bits
 *   (hostFolderName), the one name shortened, and claimed by an owner record (lib/claims.ts) like every resource.
 * docs/threat-model.md lists every such name with its claim and its check.
 */
import { base32, sha256, utf8Bytes } from './sha256';
import { tagHash } from './tag-hash';


/** The longest id (and path segment) the lab accepts: well under a file name's 255 bytes, with room for suffixes. */
export const MAX_ID_LENGTH = 200;

/**
 * Room the lab's child runs add to their parent's workflow id: the nightly run's `/experiment`, then a cluster's
 * `/<class>-<index>` or a drill's `/failover-drill`, or a tool comparison's `/pgbackrest` (35 at most today).
 */
export const CHILD_ID_ROOM = 40;

/**
 * The folder of published data sets in a folder backup store (lib/data-sets.ts), beside the run folders of the
 * lab's default store: reserved among them (a run id's "_" is always doubled, so none escapes to it).
 */
export const DATA_SETS_FOLDER = '_datasets';

/**
 * Run folders the lab keeps for itself in a results or backup store: the index of runs and captures (history.ts),
 * and the published data sets.
 */
/** The `<prefix>/_datasets` key prefix of an S3 store's data sets (no leading or trailing "/"). */
export function s3DataSetsPrefix(prefix: string): string {
  const p = prefix.replace(/^\/+|\/+$/g, '');
  return p ? `${p}/${DATA_SETS_FOLDER}` : DATA_SETS_FOLDER;
}

export const RESERVED_RUN_FOLDERS = ['_history', DATA_SETS_FOLDER] as const;
export type ReservedRunFolder = (typeof RESERVED_RUN_FOLDERS)[number];

/**
 * The longest run folder name (an escaped run id): room in a file name's 255 bytes for what the lab puts beside it
 * (`.<name>.storage-lab`, `<name>.labels.json`).
 */
export const MAX_FOLDER_LENGTH = 236;

/** Room the lab's child runs add to their parent's run folder: CHILD_ID_ROOM, each of at most 3 "/" escaped to 3 characters. */
export const CHILD_FOLDER_ROOM = CHILD_ID_ROOM + 3 * 2;

/** Why `name` cannot be one path segment, or null when it can. Pure: the workflows' doors and the stores share it. */
export function segmentProblem(name: string, maxLength = MAX_ID_LENGTH): string | null {
  if (typeof name !== 'string' || name.length === 0) return 'must not be empty';
  if (name.length > maxLength) return `is ${name.length} characters long, more than ${maxLength}`;
  if (name === '.' || name === '..') return 'names a folder itself or its parent';
  if (name.includes('/')) return 'must not contain "/" (it would name a folder below another)';
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'must not contain NUL or other control characters';
  if (name.startsWith('-')) return 'must not start with "-" (a tool would read it as an option)';
  return null;
}

/** Thrown when an id cannot become a path segment; `field` is what the message names. */
export class UnsafeIdError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'UnsafeIdError';
  }
}

/** `name` as one path segment, or an UnsafeIdError naming `field`. */
export function safeSegment(name: string, field: string): string {
  const problem = segmentProblem(name);
  if (problem) throw new UnsafeIdError(field, `${JSON.stringify(name)} ${problem}; use letters, digits, "-" and "_"`);
  return name;
}

/** Characters a run folder keeps as they are; "_" starts an escape, so it is escaped itself. */
const FOLDER_SAFE = /[A-Za-z0-9.-]/;

/**
 * A run id as one folder name, injectively: letters, digits, "." and "-" stay; "_" becomes "__"; every other
 * character becomes "_" and two hex digits per UTF-8 byte ("/" is "_2f"). No code is a prefix of another, so two ids
 * never share a folder (`a/b` is `a_2fb`, `a_b` is `a__b`), and runIdOfFolder reads the id back.
 */
export function escapeRunId(runId: string): string {
  let out = '';
  for (const ch of String(runId)) {
    if (FOLDER_SAFE.test(ch)) out += ch;
    else if (ch === '_') out += '__';
    else for (const byte of utf8Bytes(ch)) out += `_${byte.toString(16).padStart(2, '0')}`;
  }
  return out;
}

/** The run id a folder name escapes (escapeRunId), or null when it is no such name. */
export function runIdOfFolder(folder: string): string | null {
  const bytes: number[] = [];
  for (let i = 0; i < folder.length; i++) {
    const ch = folder[i];
    if (FOLDER_SAFE.test(ch)) bytes.push(ch.charCodeAt(0));
    else if (ch !== '_') return null;
    else if (folder[i + 1] === '_') {
      bytes.push(0x5f);
      i++;
    } else if (/^[0-9a-f]{2}$/.test(folder.slice(i + 1, i + 3))) {
      bytes.push(parseInt(folder.slice(i + 1, i + 3), 16));
      i += 2;
    } else return null;
  }
  // Only the one spelling escapeRunId writes (not "_61" for "a"): the mapping stays one-to-one both ways.
  const id = decodeUtf8(bytes);
  return id !== null && escapeRunId(id) === folder ? id : null;
}

/** UTF-8 bytes as text, or null when they are not valid UTF-8. */
function decodeUtf8(bytes: number[]): string | null {
  let out = '';
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    const n = b < 0x80 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 0;
    if (!n || i + n > bytes.length) return null;
    let cp = n === 1 ? b : b & (0xff >> (n + 1));
    for (let k = 1; k < n; k++) {
      if ((bytes[i + k] & 0xc0) !== 0x80) return null;
      cp = (cp << 6) | (bytes[i + k] & 63);
    }
    out += String.fromCodePoint(cp);
    i += n;
  }
  return out;
}

/**
 * The folder (or key prefix) of a run in a results or backup store: its id escaped injectively (escapeRunId), then
 * refused if it is not one safe segment, is too long, or is a folder the lab reserves.
 */
export function runFolderName(runId: string): string {
  const name = escapeRunId(runId);
  const problem =
    segmentProblem(name, MAX_FOLDER_LENGTH) ?? ((RESERVED_RUN_FOLDERS as readonly string[]).includes(name) ? 'is reserved for the lab\'s own folders (its index of runs, its data sets)' : null);
  if (problem) throw new UnsafeIdError('runId', `${JSON.stringify(runId)} (as a folder ${JSON.stringify(name)}) ${problem}; use another id`);
  return name;
}

/**
 * The folder a run had before names were escaped injectively: every character outside [A-Za-z0-9._-] became "_", so
 * `a/b` and `a_b` shared one. Only read, and only where the folder's own claim names the run (lib/results-store.ts,
 * lib/backup-stores.ts): results and stores of runs made before the change stay found. Null when it is not a segment.
 */
export function legacyRunFolderName(runId: string): string | null {
  const name = String(runId).replace(/[^A-Za-z0-9._-]/g, '_');
  return segmentProblem(name) === null && !(RESERVED_RUN_FOLDERS as readonly string[]).includes(name) ? name : null;
}

/**
 * Problems of a workflow id, each "why; fix": `/`-separated parts (the lab's own children are `<run>/<child>`), each
 * a safe segment, the whole a run folder name that is not reserved, and short enough (`limit`) for its children.
 */
export function workflowIdProblem(id: string, limit = MAX_ID_LENGTH): string | null {
  if (typeof id !== 'string' || id.length === 0) return 'must not be empty; start the run with a workflow id of letters, digits, "-" and "_"';
  if (id.length > limit) return `is ${id.length} characters long; use at most ${limit} (the lab's child runs append up to ${CHILD_ID_ROOM})`;
  for (const part of id.split('/')) {
    const problem = segmentProblem(part);
    if (problem) return `${JSON.stringify(id)}: part ${JSON.stringify(part)} ${problem}; use letters, digits, "-" and "_" in each part`;
  }
  try {
    runFolderName(id);
  } catch (err) {
    return (err as UnsafeIdError).problem.replace(/use another id$/, 'use another workflow id');
  }
  const folderLimit = limit < MAX_ID_LENGTH ? MAX_FOLDER_LENGTH - CHILD_FOLDER_ROOM : MAX_FOLDER_LENGTH;
  const folder = escapeRunId(id);
  if (folder.length > folderLimit)
    return `${JSON.stringify(id)} is ${folder.length} characters long as a folder (each character but letters, digits, "." and "-" takes 2 to 12); use at most ${folderLimit}, with fewer such characters`;
  return null;
}

/** Characters of a run's tag: 26 base-32 characters, 130 bits of SHA-256. */
export const RUN_TAG_LENGTH = 26;

/**
 * How a run's host ids were derived: `sha256` (runTag), or `fnv32` for runs started before it, which replay and
 * finish with the names they started with (workflows/names.ts decides with patched()).
 */
export type NameScheme = 'sha256' | 'fnv32';

/** A run's tag: 130 bits of SHA-256 of its id, in base 32. Two runs with one tag cannot be found. */
export function runTag(runId: string): string {
  return base32(tagHash(runId)).slice(0, RUN_TAG_LENGTH);
}

/** The tag host ids had before runTag: 32 bits of FNV-1a, base 36 (a second id with one tag takes seconds to find). */
export function fnv32RunTag(runId: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < runId.length; i++) {
    hash ^= runId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(36).padStart(7, '0').slice(-7);
}

/** The host of cluster `index` of a storage class (or a drill's role) in a run: `<runTag>-<class>-<index>`. */
export function hostIdFor(runId: string, className: string, index: number, scheme: NameScheme = 'sha256'): string {
  return `${scheme === 'sha256' ? runTag(runId) : fnv32RunTag(runId)}-${className}-${index}`;
}

/** The scheme a host id was derived with (fnv32 for anything that does not start with a full tag). */
export function nameSchemeOf(hostId: string): NameScheme {
  return new RegExp(`^[a-z2-7]{${RUN_TAG_LENGTH}}-`).test(hostId) ? 'sha256' : 'fnv32';
}

/** Characters of a local host's folder name: 80 bits, so the folder's socket path fits 107 bytes below a long hosts folder. */
export const HOST_FOLDER_LENGTH = 16;

/**
 * A local host's folder name. A host id of the sha256 scheme is up to 50 characters; its socket
 * (`<hosts>/<folder>/run/.s.PGSQL.<port>`) must fit in 107 bytes, so the folder is 16 base-32 characters of the host
 * id's SHA-256, and the owner record inside (lib/claims.ts) names the full host id: two ids that share a folder are
 * refused, never merged. A host id of the fnv32 scheme (a run started before) keeps its folder, named after it.
 */
export function hostFolderName(hostId: string): string {
  if (nameSchemeOf(hostId) === 'fnv32') return hostId;
  return base32(sha256(`host-folder:${hostId}`)).slice(0, HOST_FOLDER_LENGTH);
}

/** Characters of a data set's key after its `ds-` prefix: 130 bits of SHA-256 in base 32, as a run's tag. */
export const DATA_SET_KEY_LENGTH = 26;
const DATA_SET_KEY_PATTERN = new RegExp(`^ds-[a-z2-7]{${DATA_SET_KEY_LENGTH}}$`);

/**
 * A data set's key (its folder `<store>/_datasets/<key>` and its records `<key>.claim.json`, `<key>.manifest.json`):
 * `ds-` and 130 bits of SHA-256 of the canonical text of what makes two loads identical (common/input/data-set.ts).
 * A hash, never a part's text, so whatever a spec holds the key is one safe path segment and an S3 key part; two
 * different sets with one key cannot be found.
 */
export function dataSetKeyOf(canonicalParts: string): string {
  return `ds-${base32(sha256(`storage-lab data set:${canonicalParts}`)).slice(0, DATA_SET_KEY_LENGTH)}`;
}

/** Whether a value is a key dataSetKeyOf could have made: the door of every key that comes in (CLI, activities, manifests). */
export function isDataSetKey(key: unknown): key is string {
  return typeof key === 'string' && DATA_SET_KEY_PATTERN.test(key);
}
