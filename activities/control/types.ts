/** What the control activities are built from, and the shapes they take and return that workflows name. */
import type { Client } from '@temporalio/client';
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

/** One host of one provider. */
export interface HostRef {
  provider: ProviderName;
  hostId: string;
}
