import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import type { TemplateDefinition } from '../../src/templates/index.js';

/**
 * A folder holding an NDA template's definition (`nda.json`) and its two PDFs: roles Employee and Manager, a
 * required merge field `company` printed on the NDA, an optional `city` with no default, and a `startDate` with one.
 */
export async function ndaTemplateFolder(name = 'NDA'): Promise<{ dir: string; file: string; definition: TemplateDefinition }> {
  const dir = await mkdtemp(join(tmpdir(), 'esign-template-'));
  await writeFile(join(dir, 'nda.pdf'), await samplePdf('Mutual non-disclosure agreement'));
  await writeFile(join(dir, 'annex.pdf'), await samplePdf('Annex: confidential information'));
  const definition = {
    name,
    description: 'Mutual NDA for new employees',
    roles: [
      { name: 'Employee', description: 'the new employee' },
      { name: 'Manager', authenticationType: 'none', twoFactorContact: 'email' },
    ],
    fields: [
      { name: 'company', label: 'Company name' },
      { name: 'city', required: false },
      { name: 'startDate', default: '2027-01-04', pattern: '[0-9]{4}-[0-9]{2}-[0-9]{2}' },
    ],
    documents: [
      {
        title: 'NDA',
        path: 'nda.pdf',
        tags: [
          { type: 'TEXTANNOT', role: 'Employee', field: 'company', x: 72, y: 400, width: 300, height: 24, page: 0 },
          { type: 'TEXTANNOT', role: 'Employee', field: 'startDate', x: 72, y: 360, width: 150, height: 20, page: 0 },
          {
            type: 'FREEFORMTEXTTAGTEMPLATEANNOTATION',
            role: 'Employee',
            field: 'city',
            x: 240,
            y: 360,
            width: 150,
            height: 20,
            page: 0,
            required: false,
          },
          { type: 'SIGNATURETEMPLATE', role: 'Employee', x: 72, y: 120, width: 200, height: 30, page: 0 },
          { type: 'SIGNATURETEMPLATE', role: 'Manager', x: 330, y: 120, width: 200, height: 30, page: 0 },
        ],
      },
      {
        title: 'Annex',
        path: 'annex.pdf',
        tags: [{ type: 'INITIALSTEMPLATE', role: 'Employee', x: 72, y: 60, width: 60, height: 30, page: 0 }],
      },
    ],
    defaults: { emailSubject: 'Your NDA', notifyParticipants: { email: false }, signingDeadline: '14 days' },
  } satisfies TemplateDefinition;
  const file = join(dir, 'nda.json');
  await writeFile(file, JSON.stringify(definition, null, 2));
  return { dir, file, definition };
}
