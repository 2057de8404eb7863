import type { FastifyRequest } from 'fastify';
import type { ClientInfo } from '../authentication.js';

/** Where a request came from, for the audit trail: the peer address and the browser, as the request says. */
export function clientInfo(request: FastifyRequest): ClientInfo {
  const userAgent = request.headers['user-agent'];
  return { ip: request.ip, ...(userAgent ? { userAgent: userAgent.slice(0, 300) } : {}) };
}
