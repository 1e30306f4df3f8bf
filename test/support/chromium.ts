/** Debian's Chromium driven through playwright-core: headless, and nothing in it reaches out to the network. */
import { type Browser, chromium } from 'playwright-core';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** `gpu: true` leaves the GPU process on (WebGPU through SwiftShader needs it); `extra` adds flags. */
export const launchChromium = (extra: string[] = [], opts: { gpu?: boolean } = {}): Promise<Browser> =>
  chromium.launch({ executablePath: '/usr/bin/chromium', args: [...ARGS, ...(opts.gpu ? [] : ['--disable-gpu']), ...extra] });
