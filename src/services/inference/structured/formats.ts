/**
 * String `format`s as patterns over printable ASCII. Each describes a subset of what the format allows (and
 * of what ajv-formats' full mode accepts), chosen to be short and unambiguous: lower-case hex, ASCII host
 * names, time zones always written out. Dates are real calendar dates (29 February only in leap years).
 */
const DATE =
  '(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8])))';
const TIME = '(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d{1,6})?(?:Z|[+-](?:0\\d|1[0-4]):[0-5]\\d)';
// Short, hyphen-free labels keep the automata small (and any lookahead product over them).
const LABEL = '[a-z0-9]{1,12}';
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';

export const FORMAT_PATTERNS: Record<string, string> = {
  date: `^${DATE}$`,
  time: `^${TIME}$`,
  'date-time': `^${DATE}T${TIME}$`,
  duration:
    '^P(?:\\d{1,4}W|(?:\\d{1,4}Y)?(?:\\d{1,4}M)?\\d{1,4}D(?:T\\d{1,4}H(?:\\d{1,4}M)?(?:\\d{1,4}S)?)?|T\\d{1,4}H(?:\\d{1,4}M)?(?:\\d{1,4}S)?)$',
  email: `^[a-z0-9_+-]{1,24}(?:\\.[a-z0-9_+-]{1,24}){0,2}@${LABEL}(?:\\.${LABEL}){0,2}\\.[a-z]{2,6}$`,
  uuid: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
  uri: `^https?://${LABEL}(?:\\.[a-z]{2,6}){0,2}(?:/[a-zA-Z0-9._~-]{0,24}){0,6}$`,
  ipv4: `^${OCTET}(?:\\.${OCTET}){3}$`,
  ipv6: '^[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){7}$',
  hostname: `^${LABEL}(?:\\.[a-z]{2,6}){0,2}$`,
};
