import pkg from '../package.json' with { type: 'json' };

/** Server version, YYYY.M.PATCH, from package.json. */
export const VERSION: string = pkg.version;
