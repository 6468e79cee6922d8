/**
 * No secret reaches Temporal: a full `ci` run (every phase) with fake AWS credentials in the environment of the
 * control worker and the host agents; every event of the experiment's and its clusters' histories, payloads
 * decoded to text, is searched for each host's generated database password, for AWS access key ids and for the
 * secret values of the environment. The run's results folder is searched too. Zero hits.
 */
import type { Client } from '@temporalio/client';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { runFolderName } from '../../lib/results-store';
import { hostIdFor } from '../../common/core/ids';
import { clusterWorkflowId } from '../../workflows/cluster-workflow';
import { startTestLab, type TestLab, hostDirOf } from '../helpers/lab';

const AWS_KEY_ID = /AKIA[0-9A-Z]{16}/g;
const CLASSES = ['local-disk', 'gp3'];

/** A workflow's whole history as text: every string and number of every event, byte arrays (payload data,
 *  failure details) decoded as UTF-8, one per line and unescaped. */
export async function historyText(client: Client, workflowId: string): Promise<string> {
  const leaves: string[] = [];
  collectLeaves(await client.workflow.getHandle(workflowId).fetchHistory(), leaves);
  return leaves.join('\n');
}

function collectLeaves(value: unknown, out: string[]): void {
  if (value instanceof Uint8Array) out.push(Buffer.from(value).toString('utf8'));
  else if (Array.isArray(value)) for (const v of value) collectLeaves(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) collectLeaves(v, out);
  else if (value !== null && value !== undefined) out.push(String(value));
}

/** Every file below a folder, as text. */
function filesText(dir: string): string {
  if (!existsSync(dir)) return '';
  return readdirSync(dir)
    .map((name) => path.join(dir, name))
    .map((p) => (statSync(p).isDirectory() ? filesText(p) : readFileSync(p, 'utf8')))
    .join('\n');
}

describe('secrets stay out of workflow histories (e2e)', () => {
  let lab: TestLab;
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
  // Fake credentials that look real: if anything copies the environment into a payload, the scan finds them.
  const fakeKeyId = `AKIA${randomBytes(12).toString('hex').toUpperCase().slice(0, 16)}`;
  const fakeSecret = randomBytes(30).toString('base64');

  beforeAll(async () => {
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: fakeKeyId, AWS_SECRET_ACCESS_KEY: fakeSecret });
    lab = await startTestLab('secrets');
  });
  afterAll(async () => {
    await lab?.close();
    for (const [name, value] of [['AWS_ACCESS_KEY_ID', saved.id], ['AWS_SECRET_ACCESS_KEY', saved.secret]] as const)
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
  });

  it('finds no database password, AWS key or environment secret in any event of a ci run', async () => {
    const handle = await lab.startExperiment({ preset: 'ci' });
    const hostIds = CLASSES.map((c) => hostIdFor(handle.workflowId, c, 0));
    // Each host's password exists only while the host does: read it before teardown.
    const passwords = new Map<string, string>();
    let closed = false;
    const done = handle.result().finally(() => (closed = true));
    while (!closed && passwords.size < hostIds.length) {
      for (const hostId of hostIds) {
        const file = path.join(hostDirOf(lab.paths, hostId), 'secrets', 'db-password');
        if (!passwords.has(hostId) && existsSync(file)) {
          const text = readFileSync(file, 'utf8').trim();
          if (text) passwords.set(hostId, text);
        }
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(((await done) as { status: string }).status).toBe('completed');
    expect([...passwords.keys()].sort()).toEqual([...hostIds].sort());

    const ids = [handle.workflowId, ...CLASSES.map((c) => clusterWorkflowId(handle.workflowId, c, 0))];
    const histories = await Promise.all(ids.map((id) => historyText(lab.client, id)));
    const results = filesText(path.join(lab.paths.resultsDir, runFolderName(handle.workflowId)));
    // The scan reads decoded payloads: the input, the spec and the measured figures are there as text.
    expect(histories[0]).toContain('"preset":"ci"');
    expect(histories[1]).toContain('tpsSeries');
    expect(results).toContain('"tpsSeries"');

    const secrets = [
      ...[...passwords.values()].flatMap((p) => [p, Buffer.from(p).toString('base64')]),
      fakeSecret,
      ...Object.entries(process.env)
        .filter(([name, value]) => /SECRET|PASSWORD|TOKEN|API_KEY/i.test(name) && value && value.length >= 8)
        .map(([, value]) => value as string),
    ];
    const hits: string[] = [];
    for (const [source, text] of [...ids.map((id, i) => [`history of ${id}`, histories[i]]), ['results folder', results]]) {
      for (const secret of secrets) if (text.includes(secret)) hits.push(`${source}: a secret (${secret.length} chars)`);
      for (const m of text.matchAll(AWS_KEY_ID)) hits.push(`${source}: AWS access key id ${m[0]}`);
    }
    expect(hits).toEqual([]);
    console.log(
      `scanned ${ids.length} histories (${histories.reduce((s, h) => s + h.length, 0)} chars) and ${results.length} chars of results for ${secrets.length} secrets: 0 hits`,
    );
    expect(lab.leftovers(hostIds)).toEqual([]);
  });
});
