import type { DateFormat, Participant, Tag } from '../../../src/esign/schemas.js';

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

function ordinal(n: number): string {
  const s = ['th', 'st', 'nd', 'rd'];
  const v = n % 100;
  return `${n}${s[(v - 20) % 10] ?? s[v] ?? s[0]}`;
}

/** Formats a date in one of the spec's `dateFormat` values (UTC). */
export function formatDate(date: Date, format: DateFormat = 'MM/DD/YYYY'): string {
  const dd = String(date.getUTCDate()).padStart(2, '0');
  const mm = String(date.getUTCMonth() + 1).padStart(2, '0');
  const yyyy = String(date.getUTCFullYear());
  const month = MONTHS[date.getUTCMonth()]!;
  switch (format) {
    case 'MM/DD/YYYY':
      return `${mm}/${dd}/${yyyy}`;
    case 'DD/MM/YYYY':
      return `${dd}/${mm}/${yyyy}`;
    case 'MM/DD/YY':
      return `${mm}/${dd}/${yyyy.slice(2)}`;
    case 'DD/MM/YY':
      return `${dd}/${mm}/${yyyy.slice(2)}`;
    case 'MMMM do, yyyy':
      return `${month} ${ordinal(date.getUTCDate())}, ${yyyy}`;
    case 'full':
      return date.toUTCString().slice(0, 16);
    case 'MMMM':
      return month;
    case 'do':
      return ordinal(date.getUTCDate());
    case 'yyyy':
    case 'YYYY':
      return yyyy;
  }
}

export function fullName(p: Pick<Participant, 'firstName' | 'middleName' | 'lastName'>): string {
  return [p.firstName, p.middleName, p.lastName].filter(Boolean).join(' ');
}

/** The value a signer applies to a tag unless they type another one. */
export function defaultTagValue(
  tag: Tag,
  signer: Pick<Participant, 'firstName' | 'middleName' | 'lastName'>,
  context: { now: Date; documentId: string; esignId: string },
): string {
  switch (tag.type) {
    case 'SIGNATURETEMPLATE':
    case 'SIGNHERETAGTEMPLATEANNOTATION':
    case 'FULLNAMETEMPLATE':
      return fullName(signer);
    case 'INITIALSTEMPLATE':
    case 'INITIALHERETAGTEMPLATEANNOTATION':
      return [signer.firstName, signer.middleName, signer.lastName]
        .filter(Boolean)
        .map((n) => n!.charAt(0).toUpperCase())
        .join('');
    case 'DATETEMPLATE':
    case 'COMMISSIONEXPIRATIONTEMPLATE':
      return formatDate(context.now, tag.dateFormat);
    case 'DOCUMENTIDTEMPLATE':
      return context.documentId;
    case 'NOTARYSESSIONIDTEMPLATE':
      return context.esignId;
    case 'FREEFORMTEXTTAGTEMPLATEANNOTATION':
    case 'TEXTANNOT':
    case 'DISCLAIMERTEMPLATE':
      return typeof tag.customData.text === 'string' ? tag.customData.text : 'Approved';
    default:
      return typeof tag.customData.text === 'string' ? tag.customData.text : tag.type.replace(/TEMPLATE.*$/, '');
  }
}

/** A tag is required unless the request says `required: false`. */
export function isRequired(tag: Tag): boolean {
  return tag.required !== false;
}
