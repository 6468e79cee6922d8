/**
 * Logs of a worker process, through the SDK's logger: every line says who wrote it (role, host, run) and what it
 * is about (the SDK adds the workflow's and activity's ids to lines logged from workflows and activities). JSON
 * lines when stdout is not a terminal (log files locally, the journal on AWS hosts: systemd keeps the agent's
 * stdout), short text when a person watches.
 */
import type { LogLevel, LogMetadata } from '@temporalio/common';
import { DefaultLogger, Runtime, makeTelemetryFilterString, type LogEntry } from '@temporalio/worker';

/** Keys the SDK adds that say nothing to a person reading a log (a task token is long and opaque). */
const DROPPED_META = new Set(['taskToken']);

/** One log line: JSON for machines, `time LEVEL [who] message key=value` for a terminal. */
export function formatLogLine(entry: LogEntry, base: Record<string, string>, json: boolean): string {
  const time = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
  const meta = Object.fromEntries(Object.entries(entry.meta ?? {}).filter(([k, v]) => !DROPPED_META.has(k) && v !== undefined));
  if (json) return JSON.stringify({ time, level: entry.level, msg: entry.message, ...base, ...meta });
  const who = Object.values(base).join(' ');
  const rest = Object.entries(meta)
    .filter(([k]) => ['workflowId', 'activityType', 'attempt', 'sdkComponent'].includes(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return `${time} ${entry.level} [${who}] ${entry.message}${rest.length ? ` ${rest.join(' ')}` : ''}`;
}

/**
 * Installs the process's logger before anything else of the SDK runs; `base` goes on every line (role, hostId,
 * runId). The level comes from STORAGE_LAB_LOG_LEVEL (default INFO); the SDK's native core logs at WARN and above.
 */
export function installLogging(base: Record<string, string>, out: NodeJS.WriteStream = process.stdout): DefaultLogger {
  const level = (process.env.STORAGE_LAB_LOG_LEVEL ?? 'INFO').toUpperCase() as LogLevel;
  const json = !out.isTTY;
  const logger = new DefaultLogger(level, (entry) => out.write(`${formatLogLine(entry, base, json)}\n`));
  Runtime.install({ logger, telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} } } });
  return logger;
}

/** The process's logger (the one installed above, or the SDK's default). */
export function log(level: LogLevel, message: string, meta?: LogMetadata): void {
  Runtime.instance().logger.log(level, message, meta);
}
