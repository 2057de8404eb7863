import type { FastifyReply } from 'fastify';
import { PROBLEM_CONTENT_TYPE } from '../esign/schemas.js';

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

export function sendProblem(
  reply: FastifyReply,
  status: number,
  detail: string,
  extra: { errors?: { pointer: string; detail: string }[]; headers?: Record<string, string>; code?: string } = {},
): FastifyReply {
  for (const [k, v] of Object.entries(extra.headers ?? {})) void reply.header(k, v);
  return reply
    .code(status)
    .type(PROBLEM_CONTENT_TYPE)
    .send({
      type: 'about:blank',
      title: TITLES[status] ?? 'Error',
      status,
      detail,
      ...(extra.errors ? { errors: extra.errors } : {}),
      ...(extra.code ? { code: extra.code } : {}),
    });
}
