/** Which iframe style values the provider sandbox's signing page applies (spec 7). */
import type { IframeStyle } from '../../../src/esign/schemas.js';

const STYLE_COLOUR = /^#(?:[0-9a-f]{3}|[0-9a-f]{4}|[0-9a-f]{6}|[0-9a-f]{8})$/i;

/** Spec 7: colours without a leading `#` are accepted but not applied. */
export function isAppliedColour(value: string | undefined): value is string {
  return value !== undefined && STYLE_COLOUR.test(value);
}

const STYLE_COLOUR_KEYS = ['primaryColor', 'secondaryColor', 'textColor', 'background', 'successColor', 'errorColor', 'infoColor'] as const;

/** The part of a requested style the page applies: valid colours and a plain font name. */
export function appliedStyle(style: IframeStyle | undefined): IframeStyle {
  const out: IframeStyle = {};
  if (!style) return out;
  for (const key of STYLE_COLOUR_KEYS) {
    const v = style[key];
    if (isAppliedColour(v)) out[key] = v;
  }
  if (style.fontType && /^[\w\s,'"-]{1,200}$/.test(style.fontType)) out.fontType = style.fontType;
  return out;
}
