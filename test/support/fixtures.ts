import { randomUUID } from 'node:crypto';
import type { CreateTransactionRequest, Participant } from '../../src/esign/schemas.js';

export function participant(overrides: Partial<Participant> = {}): Participant {
  return {
    id: randomUUID(),
    email: 'signer@example.com',
    firstName: 'Ada',
    lastName: 'Lovelace',
    authenticationType: 'none',
    twoFactorContact: 'email',
    ...overrides,
  };
}

/** A valid create request with one document and one signer whose tags refer to them. */
export function createRequest(storagePath = 'folder-1/contract.pdf'): CreateTransactionRequest {
  const signer = participant();
  return {
    status: 'esign_pending',
    referenceId: `ref-${randomUUID()}`,
    notifyParticipants: { email: false },
    documents: [
      {
        id: randomUUID(),
        title: 'Contract',
        StoragePath: storagePath,
        sessionType: 'esign',
        tags: [
          {
            type: 'SIGNATURETEMPLATE',
            x: 100,
            y: 100,
            width: 150,
            height: 40,
            signerId: signer.id,
            customData: {},
            page: 0,
            required: true,
          },
          {
            type: 'DATETEMPLATE',
            x: 300,
            y: 100,
            width: 100,
            height: 20,
            signerId: signer.id,
            customData: {},
            page: 0,
            dateFormat: 'MM/DD/YYYY',
          },
        ],
      },
    ],
    participants: [signer],
  };
}
