/** turndown ships no type declarations; office.ts types the few members it uses. */
declare module 'turndown';
