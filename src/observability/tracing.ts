import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';

/**
 * OpenTelemetry tracing for the Temporal client, workflows and activities,
 * through the SDK's OpenTelemetry plugin. Off unless an exporter is configured.
 * The same span processor serves the global tracer (client and activity spans)
 * and the workflow sink (workflow spans, exported from outside the sandbox).
 */
export function createTracingPlugin(serviceName: string, spanProcessor: SpanProcessor): OpenTelemetryPlugin {
  const resource = new Resource({ 'service.name': serviceName });
  // The Node provider also registers an async-context manager: without it no span is active, so none propagates.
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  return new OpenTelemetryPlugin({ resource, spanProcessor });
}

/** On when OTEL_EXPORTER_OTLP_ENDPOINT (or ESIGN_OTLP_TRACES_URL) is set; spans go over OTLP/HTTP. */
export function tracingPluginFromEnv(serviceName: string, env: NodeJS.ProcessEnv = process.env): OpenTelemetryPlugin | undefined {
  const url =
    env.ESIGN_OTLP_TRACES_URL ??
    (env.OTEL_EXPORTER_OTLP_ENDPOINT ? `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/$/, '')}/v1/traces` : undefined);
  if (!url) return undefined;
  return createTracingPlugin(env.OTEL_SERVICE_NAME ?? serviceName, new BatchSpanProcessor(new OTLPTraceExporter({ url })));
}
