/**
 * What the operator of a control worker decides for every run on AWS, whatever a spec says: which AMIs may boot
 * (by owner), the most a run may cost and the prices that ceiling is reckoned at, and the Temporal endpoint the host
 * agents dial. A spec is untrusted input; these come from the control worker's environment (worker/aws-setup.ts):
 *   STORAGE_LAB_AWS_IMAGE_OWNERS     account ids or owner aliases whose images may boot, comma-separated
 *                                    (default 136693071363, Debian's publisher account)
 *   STORAGE_LAB_AWS_MAX_COST_USD     the ceiling of a run's estimated cost (default 100); aws.maxCostUsd may lower it
 *   STORAGE_LAB_AWS_HOURLY_PRICES    type=USD per hour, comma-separated: the instance types runs may use and the
 *                                    prices the ceiling is reckoned at (default m6id.4xlarge=0.9492)
 *   STORAGE_LAB_AWS_TEMPORAL_ADDRESS host:port the host agents dial (default: the control worker's TEMPORAL_ADDRESS)
 */
import { HOST_AND_PORT, INSTANCE_TYPE } from '../../../common/input/fields';
import { AWS_LIMITS, LIST_PRICES_USD } from '../../../common/providers/aws';

/** The operator's rules for runs on AWS. */
export interface AwsPolicy {
  /** Owners (12-digit account ids, or aliases such as "amazon") whose images may boot with the lab's host role. */
  imageOwners: string[];
  /** The most a run's estimate may be, in USD. */
  maxCostUsd: number;
  /** On-demand USD per hour of each instance type a run may use; a spec's own prices may be higher, never lower. */
  hourlyPriceUsd: Record<string, number>;
  /** host:port of this lab's Temporal for host agents; unset: the control worker's own address. */
  temporalAddress?: string;
}

/** Debian's publisher account for its official AMIs (Debian 10 to 13), as Debian's cloud team publishes them. */
export const DEBIAN_IMAGE_OWNER = '136693071363';

/**
 * By default only Debian's own images boot: the host bootstrap is written for Debian (apt, PGDG), and any other
 * owner is a decision for the operator, who can add e.g. "amazon" or their own account.
 */
export const DEFAULT_AWS_POLICY: AwsPolicy = {
  imageOwners: [DEBIAN_IMAGE_OWNER],
  maxCostUsd: 100,
  hourlyPriceUsd: { ...LIST_PRICES_USD.hourly },
};

/** An image owner: a 12-digit account id or an alias ("amazon", "aws-marketplace"). */
const IMAGE_OWNER = /^(?:\d{12}|[a-z][a-z0-9-]{1,62})$/;

/** The operator's rules from the control worker's environment; a bad value throws, naming the variable. */
export function awsPolicyFromEnv(env: NodeJS.ProcessEnv): AwsPolicy {
  const list = (name: string) =>
    (env[name] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  const policy: AwsPolicy = { ...DEFAULT_AWS_POLICY, hourlyPriceUsd: { ...DEFAULT_AWS_POLICY.hourlyPriceUsd } };

  const owners = list('STORAGE_LAB_AWS_IMAGE_OWNERS');
  const badOwner = owners.find((o) => !IMAGE_OWNER.test(o));
  if (badOwner) throw new Error(`STORAGE_LAB_AWS_IMAGE_OWNERS: "${badOwner}" is not an account id (12 digits) or an owner alias such as amazon`);
  if (owners.length) policy.imageOwners = owners;

  const cost = env.STORAGE_LAB_AWS_MAX_COST_USD;
  if (cost !== undefined && cost !== '') {
    const usd = Number(cost);
    if (!(usd > 0 && usd <= AWS_LIMITS.maxCostUsd))
      throw new Error(`STORAGE_LAB_AWS_MAX_COST_USD must be a number of USD above 0 and at most ${AWS_LIMITS.maxCostUsd} (got "${cost}")`);
    policy.maxCostUsd = usd;
  }

  const prices = list('STORAGE_LAB_AWS_HOURLY_PRICES');
  if (prices.length) {
    policy.hourlyPriceUsd = {};
    for (const entry of prices) {
      const [type, price] = entry.split('=');
      const usd = Number(price);
      if (!INSTANCE_TYPE.test(type ?? '') || !(usd > 0 && usd <= AWS_LIMITS.hourlyPriceUsd))
        throw new Error(`STORAGE_LAB_AWS_HOURLY_PRICES: "${entry}" is not type=USD per hour, e.g. m6id.4xlarge=0.9492`);
      policy.hourlyPriceUsd[type] = usd;
    }
  }

  const address = env.STORAGE_LAB_AWS_TEMPORAL_ADDRESS;
  if (address) {
    if (!HOST_AND_PORT.test(address)) throw new Error(`STORAGE_LAB_AWS_TEMPORAL_ADDRESS must be host:port, e.g. my-ns.a1b2c.tmprl.cloud:7233 (got "${address}")`);
    policy.temporalAddress = address;
  }
  return policy;
}
