/** The manifest the control worker would write for a publish (the data-set integration tests, folder and S3 alike). */
import type { PublishOutcome } from '../../activities/host/data-set';
import { expiresAt, type DataSetKeyParts, type DataSetManifest } from '../../common/input/data-set';

export function manifestOf(sourceHostId: string, p: PublishOutcome, k: string, keyParts: DataSetKeyParts, facts = p.facts): DataSetManifest {
  const now = new Date().toISOString();
  return {
    formatVersion: 1,
    key: k,
    parts: keyParts,
    rows: Object.values(facts.relations).reduce((s, r) => s + r.rows, 0),
    facts,
    backup: { tool: 'wal-g', label: p.backup.label, repositoryBytes: p.backup.repositoryBytes, databaseBytes: p.backup.databaseBytes },
    loadSeconds: 1,
    publishSeconds: p.seconds,
    source: { hostId: sourceHostId, runId: 'run-a', workflowId: 'run-a/gp3-0' },
    publishedAt: now,
    expiresAt: expiresAt(now, 7),
  };
}
