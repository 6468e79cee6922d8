/** What a run on AWS needs from its spec, and how big its gp3 volumes are. Pure: the CLI, workflows and provider share it. */
import type { SpecProblem } from '../core/errors';
import { classLimits, type ExperimentSpec, type StorageClassSpec } from './spec';

/** Room on a gp3 volume beyond the data estimate (file system overhead, WAL bursts), as on local volumes. */
const VOLUME_HEADROOM_GIB = 2;
/** gp3 allows at most 500 provisioned IOPS per GiB. */
const GP3_MAX_IOPS_PER_GIB = 500;

/** Size of a class's gp3 data volume: the spec's size, or the data estimate plus headroom; large enough for its IOPS. */
export function dataVolumeGiB(volumeBytes: number, cls: StorageClassSpec): number {
  const limits = classLimits(cls);
  const wanted = cls.sizeGiB ?? volumeBytes / 2 ** 30 + VOLUME_HEADROOM_GIB;
  const forIops = limits ? limits.iops / GP3_MAX_IOPS_PER_GIB : 1;
  return Math.ceil(Math.max(1, wanted, forIops));
}

/**
 * Fields a real run on AWS cannot do without (a dry run needs none of them). Each problem names the field and
 * what to put there; infra/providers/aws/README.md shows how to make each.
 */
export function awsRunProblems(spec: ExperimentSpec): SpecProblem[] {
  if (spec.provider !== 'aws') return [];
  if (!spec.aws) return [{ path: 'aws', message: 'provider "aws" needs an aws section; see infra/providers/aws/README.md' }];
  const problems: SpecProblem[] = [];
  const need = (field: keyof NonNullable<ExperimentSpec['aws']>, what: string) => {
    if (!spec.aws?.[field]) problems.push({ path: `aws.${field}`, message: `is required for a run on AWS: ${what}` });
  };
  need('subnetId', 'the subnet the hosts start in (its availability zone must offer the instance type), e.g. subnet-0abc...');
  need('instanceProfileName', 'an instance profile whose role has infra/providers/aws/iam/host-policy.json (SSM parameters, the agent package)');
  need('temporalAddress', 'host:port the host agents dial: your Temporal Cloud namespace endpoint or self-hosted frontend');
  if (!spec.aws.imageId && !spec.aws.imageSsmParameter)
    problems.push({ path: 'aws.imageId', message: 'set an AMI id or aws.imageSsmParameter (a public Debian 12 parameter by default)' });
  if (spec.aws.temporalTlsCertParameter && !spec.aws.temporalTlsKeyParameter)
    problems.push({ path: 'aws.temporalTlsKeyParameter', message: 'mTLS needs the key parameter with the certificate parameter' });
  if (spec.aws.temporalTlsKeyParameter && !spec.aws.temporalTlsCertParameter)
    problems.push({ path: 'aws.temporalTlsCertParameter', message: 'mTLS needs the certificate parameter with the key parameter' });
  return problems;
}
