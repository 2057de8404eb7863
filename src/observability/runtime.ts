import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import { pino, type Logger } from 'pino';
import { z } from 'zod';

export const ObservabilityEnv = z.object({
  LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error']).default('info'),
  /** Prometheus endpoint of the Temporal runtime (SDK metrics and the workflows' own). Empty: off. */
  ESIGN_METRICS_ADDRESS: z.string().default('127.0.0.1:9464'),
});

const SDK_LEVEL: Record<string, LogLevel> = { trace: 'TRACE', debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR' };

/**
 * One JSON logger for the process, with Temporal's runtime (Rust core and
 * SDK) logs routed into it, and the runtime's Prometheus exporter. Call once,
 * before any worker or native connection is created.
 */
export function installObservability(
  component: string,
  env: NodeJS.ProcessEnv = process.env,
): { logger: Logger; metricsAddress: string | undefined } {
  const config = ObservabilityEnv.parse(env);
  const logger = pino({ level: config.LOG_LEVEL, base: { component } });
  const sdkLogger = new DefaultLogger(SDK_LEVEL[config.LOG_LEVEL], (entry) => {
    const level =
      entry.level === 'TRACE'
        ? 'trace'
        : entry.level === 'DEBUG'
          ? 'debug'
          : entry.level === 'WARN'
            ? 'warn'
            : entry.level === 'ERROR'
              ? 'error'
              : 'info';
    logger[level]({ ...(entry.meta ?? {}) }, entry.message);
  });
  const metricsAddress = config.ESIGN_METRICS_ADDRESS || undefined;
  Runtime.install({
    logger: sdkLogger,
    ...(metricsAddress ? { telemetryOptions: { metrics: { prometheus: { bindAddress: metricsAddress } } } } : {}),
  });
  return { logger, metricsAddress };
}
