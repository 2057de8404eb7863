// The template bulk-send tests and recorded histories use (no test runner imports: scripts load it too).

/** One role, one required merge field and an optional one, each shown in a text tag. */
export const NDA_DEFINITION = {
  name: 'NDA-bulk',
  roles: [{ name: 'Employee' }],
  fields: [{ name: 'company' }, { name: 'team', required: false }],
  documents: [
    {
      title: 'Non-disclosure agreement',
      path: 'nda.pdf',
      tags: [
        { type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, role: 'Employee' },
        { type: 'TEXTANNOT', x: 72, y: 200, width: 200, height: 20, page: 0, role: 'Employee', field: 'company' },
        { type: 'TEXTANNOT', x: 72, y: 240, width: 200, height: 20, page: 0, role: 'Employee', field: 'team' },
      ],
    },
  ],
  defaults: { notifyParticipants: { email: false } },
} as const;

/** `rows` rows of `Employee,company`, each a different person. */
export function ndaCsv(rows: number, extra: string[] = []): Buffer {
  const lines = [
    'Employee,company',
    ...Array.from({ length: rows }, (_, i) => `Person ${i + 1} <person${i + 1}@example.com>,Acme ${i % 7}`),
  ];
  return Buffer.from([...lines, ...extra].join('\n') + '\n');
}
