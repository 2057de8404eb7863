/**
 * The one error closing an abandoned lane's connections can raise, later and from a timer: the Temporal client's retry
 * (grpc-retry) of a call the hung run still had in flight fires into the closed channel. It says nothing about any
 * schedule; the explorer's command and the test suite (vitest.config.ts) pass it by.
 */
export function isClosedChannelRetry(error: { message: string; stack?: string }): boolean {
  return error.message === 'Channel has been shut down' && (error.stack ?? '').includes('@temporalio/client/lib/grpc-retry');
}
