/** storage-lab dev up|down|status */
import { devDown, devStatus, devUp } from '../local-services';

export async function devUpCommand(): Promise<void> {
  const ep = await devUp();
  console.log(`Temporal dev server at ${ep.address}; UI ${ep.uiUrl}; control worker running.`);
}

export async function devDownCommand(): Promise<void> {
  await devDown();
  console.log('stopped the control worker and the Temporal dev server');
}

export async function devStatusCommand(): Promise<void> {
  const services = devStatus();
  // Draining control workers have longer names (control-worker-draining-<pid>).
  const width = Math.max(15, ...services.map((s) => s.name.length));
  for (const s of services)
    console.log(`${s.name.padEnd(width)} ${s.running ? `running (pid ${s.pid})` : 'stopped'.padEnd(20)}  ${s.detail}`);
}
