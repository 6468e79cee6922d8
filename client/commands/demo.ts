/** storage-lab demo: the main job. Starts the local services, runs local-quick end to end, says where to look. */
import { devUp } from '../local-services';
import { runCommand } from './run';

export async function demoCommand(opts: { preset: string }): Promise<void> {
  const ep = await devUp();
  console.log(`Temporal UI: ${ep.uiUrl}`);
  const summary = await runCommand({ preset: opts.preset, watch: true });
  if (typeof summary === 'string') return;
  console.log(`\nReport: ${summary.location}/report.md`);
  console.log(`Temporal UI (the run is listed there): ${ep.uiUrl}/namespaces/default/workflows`);
}
