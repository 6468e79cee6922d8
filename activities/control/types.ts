/** What the control activities are built from, and the shapes they take and return that workflows name. */
import type { Client } from '@temporalio/client';
import type { Claimant } from '../../common/core/claims';
import type { HostRequest, ProviderName } from '../../common/core/hosts';
import type { ResultsStore } from '../../lib/results-store';
import type { HostProvider } from '../../infra/providers/host-provider';

/** The control worker's providers, results store and Temporal client. */
export interface ControlDeps {
  providers: { local: HostProvider; aws?: HostProvider };
  results: ResultsStore;
  /** Folder the local provider puts hosts in (free-space preflight). */
  hostsDir: string;
  /** Looks runs up for the sweeper. */
  client?: Client;
}

/** One host to make, by one provider. */
export interface ProvisionInput {
  provider: ProviderName;
  request: HostRequest;
}

/** One host of one provider, and who asks: its owner's workflow, or the sweeper for the run it judged. */
export interface HostRef {
  provider: ProviderName;
  hostId: string;
  /** The workflow that owns the host (workflowInfo(), never input); absent only in requests made before claims. */
  owner?: Claimant;
  /** Set by the sweeper only: the run whose host it removes (closed, unknown or expired). */
  sweptRun?: string;
}
