/** turndown and its GFM plugin ship no type declarations; office.ts types the few members it uses. */
declare module 'turndown';
declare module '@joplin/turndown-plugin-gfm';
