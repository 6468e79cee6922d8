/**
 * The string fields of a spec that reach a cloud API, a configuration file or a host's user-data, each checked by
 * the pattern of what it names (an AMI id, an S3 bucket, host:port, a key prefix, ...). None admits a control
 * character, a space, a quote or a shell metacharacter, so a value can never start a new line in pgBackRest's
 * config, WAL-G's or the host's agent.env, nor a second option. Errors show the expected form. Pure and
 * workflow-safe: the CLI and every workflow refuse a bad value before anything exists.
 */
import { z } from 'zod';

/** Any C0 control character or DEL: a newline in a value would add a line (an option) to the file it is written to. */
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/**
 * A string field that must match `pattern` and be at most `maxLength` long; `form` says what it must be ("an AMI
 * id: ..."), and every error repeats it. The checks stop at the first that fails, so each value gets one message.
 */
export function patternField(pattern: RegExp, maxLength: number, form: string) {
  return z
    .string({ error: `must be a string: ${form}` })
    .refine((v) => !CONTROL_CHARACTER.test(v), { error: `must not contain a control character (a newline, a tab, ...): ${form}`, abort: true })
    .max(maxLength, { error: `must be at most ${maxLength} characters: ${form}`, abort: true })
    .regex(pattern, { error: `must be ${form}` });
}

/** EC2 resource ids: a prefix and 8 (older resources) or 17 lower-case hex digits. */
const ec2Id = (prefix: string) => new RegExp(`^${prefix}-(?:[0-9a-f]{8}|[0-9a-f]{17})$`);

export const AMI_ID = ec2Id('ami');
export const SUBNET_ID = ec2Id('subnet');
export const SECURITY_GROUP_ID = ec2Id('sg');

/** An EC2 instance type: a family (m6id, u7in-32tb, c7i-flex) and a size (4xlarge, metal, metal-24xl), joined by a dot. */
export const INSTANCE_TYPE = /^[a-z][a-z0-9-]{0,23}\.[a-z0-9][a-z0-9-]{0,15}$/;

/** An AWS region: us-east-1, eu-central-2, us-gov-west-1, ap-southeast-5. */
export const AWS_REGION = /^[a-z]{2}(?:-[a-z]+){1,2}-\d{1,2}$/;

/** An IAM name (instance profiles): letters, digits and + = , . @ _ -, at most 128 (IAM's own rule). */
export const IAM_NAME = /^[\w+=,.@-]{1,128}$/;

/**
 * An SSM parameter name (AWS: letters, digits, "_", ".", "-", and "/" between the levels of a hierarchy of at most
 * 15), with or without a leading "/".
 */
export const SSM_PARAMETER_NAME = /^\/?[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+){0,14}$/;
/** SSM's longest parameter name. */
export const SSM_PARAMETER_MAX = 1011;

/**
 * The public parameters AWS and image publishers maintain (`/aws/service/...`, e.g. Debian's
 * `/aws/service/debian/release/12/latest/amd64`). A spec names the image only through these: the control worker
 * reads the parameter with its own credentials, and any other parameter of the account (a secret) must never be
 * read, let alone echoed into a failure message, on a spec's say-so.
 */
export const PUBLIC_IMAGE_PARAMETER = /^\/aws\/service\/[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+){0,12}$/;

/**
 * An S3 bucket name (S3's rules for general purpose buckets): 3-63 lower-case letters, digits, dots and hyphens,
 * starting and ending with a letter or digit, no two adjacent dots, not an IP address, none of the reserved
 * prefixes (xn--, sthree-, amzn-s3-demo-) or suffixes (-s3alias, --ol-s3, .mrap, --x-s3, --table-s3).
 */
export const S3_BUCKET =
  /^(?!xn--|sthree-|amzn-s3-demo-)(?!.*\.\.)(?!.*(?:-s3alias|--ol-s3|\.mrap|--x-s3|--table-s3)$)(?!\d{1,3}(?:\.\d{1,3}){3}$)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * A relative path of safe segments (letters, digits, ".", "_", "-") joined by "/": no "." or ".." segment, no
 * empty one, nothing absolute. S3 key prefixes and the folder store's sub-folder share it.
 */
export const SAFE_RELATIVE_PATH = /^(?!(?:.*\/)?\.{1,2}(?:\/|$))[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)*$/;

/** A Temporal namespace: letters, digits, ".", "_" and "-", starting with a letter or digit (Cloud: name.account). */
export const TEMPORAL_NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

/** A DNS name (labels of letters, digits and inner hyphens, joined by dots) or an IPv4 address. */
const HOST_NAME = '(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*';
/** An IPv6 address in brackets, as URLs and host:port write it. */
const BRACKETED_IPV6 = '\\[[0-9A-Fa-f:.]{2,45}\\]';
/** A port from 1 to 65535. */
const PORT = '(?:[1-9]\\d{0,3}|[1-5]\\d{4}|6[0-4]\\d{3}|65[0-4]\\d{2}|655[0-2]\\d|6553[0-5])';

/** host:port: a DNS name, an IPv4 address or a bracketed IPv6 address, and a port; no scheme, no path. */
export const HOST_AND_PORT = new RegExp(`^(?:${HOST_NAME}|${BRACKETED_IPV6}):${PORT}$`);

/** Hosts an `http://` endpoint may name: this machine only (the tests' moto server listens on 127.0.0.1). */
const LOOPBACK_HOST = '(?:127\\.0\\.0\\.1|\\[::1\\]|localhost)';

/**
 * An API endpoint: an https:// URL of a host and an optional port, nothing after it. Plain http:// only to a
 * loopback host: an S3 emulator on this machine (the tests run moto's server on 127.0.0.1), where nothing crosses
 * a network; anywhere else the hosts' credentials and backups would travel in clear text.
 */
export const ENDPOINT_URL = new RegExp(`^(?:https://(?:${HOST_NAME}|${BRACKETED_IPV6})|http://${LOOPBACK_HOST})(?::${PORT})?/?$`);

/** The field schemas, each with the form its errors show. */
export const AmiIdField = patternField(AMI_ID, 21, 'an AMI id: "ami-" and 8 or 17 lower-case hex digits, e.g. ami-0abcdef1234567890');
export const InstanceTypeField = patternField(INSTANCE_TYPE, 41, 'an EC2 instance type: family.size, e.g. m6id.4xlarge');
export const AwsRegionField = patternField(AWS_REGION, 32, 'an AWS region, e.g. us-east-1');
export const SubnetIdField = patternField(SUBNET_ID, 24, 'a subnet id: "subnet-" and 8 or 17 lower-case hex digits, e.g. subnet-0abc1234def567890');
export const SecurityGroupIdField = patternField(SECURITY_GROUP_ID, 20, 'a security group id: "sg-" and 8 or 17 lower-case hex digits, e.g. sg-0abc1234def567890');
export const InstanceProfileNameField = patternField(IAM_NAME, 128, 'an IAM instance profile name: letters, digits and + = , . @ _ - (at most 128), e.g. storage-lab-host');
export const SsmParameterField = patternField(
  SSM_PARAMETER_NAME,
  SSM_PARAMETER_MAX,
  'an SSM parameter name: letters, digits, "_", "." and "-", levels joined by "/" (an optional leading "/"), e.g. /storage-lab/db-password',
);
export const ImageParameterField = patternField(
  PUBLIC_IMAGE_PARAMETER,
  SSM_PARAMETER_MAX,
  'a public SSM parameter under /aws/service/ naming an AMI, e.g. /aws/service/debian/release/12/latest/amd64 (for an image of your own set aws.imageId; the control worker allows its owner, STORAGE_LAB_AWS_IMAGE_OWNERS)',
);
export const S3BucketField = patternField(S3_BUCKET, 63, 'an S3 bucket name: 3-63 lower-case letters, digits, dots and hyphens, starting and ending with a letter or digit, e.g. lab-backups');
export const KeyPrefixField = patternField(
  SAFE_RELATIVE_PATH,
  512,
  'a key prefix: segments of letters, digits, ".", "_" and "-" joined by "/", with no "." or ".." segment, no empty one and no leading "/", e.g. storage-lab/backups',
);
export const TemporalNamespaceField = patternField(TEMPORAL_NAMESPACE, 255, 'a Temporal namespace: letters, digits, ".", "_" and "-", e.g. default or my-ns.a1b2c');
export const HostAndPortField = patternField(
  HOST_AND_PORT,
  261,
  'host:port, a DNS name or IP address and a port from 1 to 65535, with no scheme and no path, e.g. my-ns.a1b2c.tmprl.cloud:7233',
);
export const EndpointField = patternField(
  ENDPOINT_URL,
  261,
  'an https:// URL of a host and an optional port, nothing after it, e.g. https://s3.us-east-1.amazonaws.com (http:// only to 127.0.0.1, [::1] or localhost)',
);

/** Where a folder store's sub-folder goes, for its messages. */
const BACKUPS_ROOT = "the lab's backups folder (STORAGE_LAB_BACKUPS_DIR)";

/**
 * The folder store's `path`: a sub-folder below the lab's backups folder, never a folder of the machine's choosing.
 * An absolute path gets its own message with the fix.
 */
export const BackupSubfolderField = z
  .string({ error: `must be a relative sub-folder of ${BACKUPS_ROOT}` })
  .refine((v) => !v.startsWith('/'), {
    error: `an absolute folder is refused: backups stay below ${BACKUPS_ROOT}; give a sub-folder of it such as "team-a/drills", or remove path to use the folder itself`,
    abort: true,
  })
  .refine((v) => !CONTROL_CHARACTER.test(v), { error: `must not contain a control character: a sub-folder of ${BACKUPS_ROOT}`, abort: true })
  .max(255, { error: `must be at most 255 characters: a sub-folder of ${BACKUPS_ROOT}`, abort: true })
  .regex(SAFE_RELATIVE_PATH, {
    error: `must be a sub-folder of ${BACKUPS_ROOT}: segments of letters, digits, ".", "_" and "-" joined by "/", with no "." or ".." segment and no empty one, e.g. team-a/drills`,
  });

