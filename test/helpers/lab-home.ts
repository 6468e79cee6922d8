/** A lab of its own for a test that drives the CLI: a home below the suite's folder and free ports for its dev server. */
import { chmodSync, mkdtempSync } from 'node:fs';
import path from 'node:path';
import { DEV_PORT_OFFSETS } from '../../client/local-services';
import { freePort, freePortBlock } from '../../lib/net';

export async function privateLabHome(name: string): Promise<{ home: string; env: NodeJS.ProcessEnv }> {
  const home = mkdtempSync(path.join(process.env.STORAGE_LAB_TEST_DIR!, `${name}-`));
  chmodSync(home, 0o755); // The postgres user must reach the host folders below it.
  return {
    home,
    env: {
      ...process.env,
      STORAGE_LAB_HOME: home,
      STORAGE_LAB_HOSTS_DIR: path.join(home, 'hosts'),
      // The dev server binds its HTTP API and metrics next to the frontend: all three free, not only the first.
      TEMPORAL_ADDRESS: `127.0.0.1:${await freePortBlock(DEV_PORT_OFFSETS)}`,
      STORAGE_LAB_UI_PORT: String(await freePort()),
    },
  };
}
