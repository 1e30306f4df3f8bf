/**
 * Bookmarks (the /Outlines tree) survive merge and split: pdf-lib copies pages but not outlines, so we
 * read each source's tree into plain nodes that point at page indices and write it back against the
 * output's pages. Entries whose target page is not in the output are dropped (their children move up).
 * Only GoTo targets inside the document are kept; URI / launch actions are dropped.
 */
import { PDFArray, PDFDict, PDFDocument, PDFHexString, PDFName, PDFNumber, type PDFObject, PDFRef, PDFString } from '@cantoo/pdf-lib';

export interface OutlineNode {
  title: string;
  /** 0-based page index in the source, or null when the entry has no usable target */
  pageIndex: number | null;
  /** the view part of the destination after the page: e.g. /XYZ left top zoom */
  view: PDFObject[];
  children: OutlineNode[];
}

export function readOutline(doc: PDFDocument): OutlineNode[] {
  const ctx = doc.context;
  const outlines = doc.catalog.lookupMaybe(PDFName.of('Outlines'), PDFDict);
  if (!outlines) return [];
  const pageIndex = new Map<PDFRef, number>();
  doc.getPages().forEach((p, i) => pageIndex.set(p.ref, i));
  const named = namedDestinations(doc);
  const resolveDest = (d: PDFObject | undefined): PDFArray | undefined => {
    const v = d instanceof PDFRef ? ctx.lookup(d) : d;
    if (v instanceof PDFArray) return v;
    if (v instanceof PDFName) return named.get(v.decodeText());
    if (v instanceof PDFString || v instanceof PDFHexString) return named.get(v.decodeText());
    if (v instanceof PDFDict) return resolveDest(v.get(PDFName.of('D'))); // /Dests entries may be << /D [...] >>
    return undefined;
  };
  const seen = new Set<PDFDict>();
  const walk = (first: PDFDict | undefined): OutlineNode[] => {
    const out: OutlineNode[] = [];
    for (let item = first; item && !seen.has(item); item = item.lookupMaybe(PDFName.of('Next'), PDFDict)) {
      seen.add(item);
      const titleObj = item.lookup(PDFName.of('Title'));
      const title = titleObj instanceof PDFString || titleObj instanceof PDFHexString ? titleObj.decodeText() : '';
      let dest = resolveDest(item.get(PDFName.of('Dest')));
      const action = item.lookupMaybe(PDFName.of('A'), PDFDict);
      if (!dest && action?.get(PDFName.of('S')) === PDFName.of('GoTo')) dest = resolveDest(action.get(PDFName.of('D')));
      const target = dest?.get(0);
      const idx = target instanceof PDFRef ? pageIndex.get(target) : target instanceof PDFNumber ? target.asNumber() : undefined;
      out.push({
        title,
        pageIndex: idx ?? null,
        view: dest ? dest.asArray().slice(1) : [],
        children: walk(item.lookupMaybe(PDFName.of('First'), PDFDict)),
      });
    }
    return out;
  };
  return walk(outlines.lookupMaybe(PDFName.of('First'), PDFDict));
}

/** /Dests (PDF 1.1) and the /Names /Dests name tree, flattened. */
function namedDestinations(doc: PDFDocument): Map<string, PDFArray> {
  const out = new Map<string, PDFArray>();
  const asDest = (v: PDFObject | undefined): PDFArray | undefined => {
    const o = v instanceof PDFRef ? doc.context.lookup(v) : v;
    if (o instanceof PDFArray) return o;
    if (o instanceof PDFDict) return asDest(o.get(PDFName.of('D')));
    return undefined;
  };
  const old = doc.catalog.lookupMaybe(PDFName.of('Dests'), PDFDict);
  for (const [k, v] of old?.entries() ?? []) {
    const d = asDest(v);
    if (d) out.set(k.decodeText(), d);
  }
  const tree = doc.catalog.lookupMaybe(PDFName.of('Names'), PDFDict)?.lookupMaybe(PDFName.of('Dests'), PDFDict);
  const seen = new Set<PDFDict>();
  const walk = (node: PDFDict | undefined) => {
    if (!node || seen.has(node)) return;
    seen.add(node);
    const names = node.lookupMaybe(PDFName.of('Names'), PDFArray);
    for (let i = 0; names && i + 1 < names.size(); i += 2) {
      const k = names.lookup(i);
      const d = asDest(names.get(i + 1));
      if (d && (k instanceof PDFString || k instanceof PDFHexString)) out.set(k.decodeText(), d);
    }
    const kids = node.lookupMaybe(PDFName.of('Kids'), PDFArray);
    for (let i = 0; kids && i < kids.size(); i++) walk(kids.lookupMaybe(i, PDFDict));
  };
  walk(tree);
  return out;
}

/** Re-target nodes at output pages: `map(sourceIndex)` gives the output page ref or undefined. */
export function retarget(
  nodes: OutlineNode[],
  map: (i: number) => PDFRef | undefined,
): { title: string; page?: PDFRef; view: PDFObject[]; children: ReturnType<typeof retarget> }[] {
  const out: ReturnType<typeof retarget> = [];
  for (const n of nodes) {
    const children = retarget(n.children, map);
    const page = n.pageIndex === null ? undefined : map(n.pageIndex);
    if (page || children.length) out.push({ title: n.title, page, view: n.view, children });
  }
  return out;
}

/** Write an outline tree into `doc`, replacing any existing one. */
export function writeOutline(doc: PDFDocument, nodes: ReturnType<typeof retarget>): void {
  if (!nodes.length) return;
  const ctx = doc.context;
  const rootRef = ctx.nextRef();
  const build = (items: typeof nodes, parent: PDFRef): { first: PDFRef; last: PDFRef; count: number } => {
    const refs = items.map(() => ctx.nextRef());
    let count = 0;
    items.forEach((it, i) => {
      const dict = ctx.obj({}) as PDFDict;
      dict.set(PDFName.of('Title'), PDFHexString.fromText(it.title));
      dict.set(PDFName.of('Parent'), parent);
      if (i > 0) dict.set(PDFName.of('Prev'), refs[i - 1]!);
      if (i < refs.length - 1) dict.set(PDFName.of('Next'), refs[i + 1]!);
      if (it.page) {
        const view = it.view.length ? it.view : [PDFName.of('Fit')];
        dict.set(PDFName.of('Dest'), ctx.obj([it.page, ...view]));
      }
      if (it.children.length) {
        const sub = build(it.children, refs[i]!);
        dict.set(PDFName.of('First'), sub.first);
        dict.set(PDFName.of('Last'), sub.last);
        dict.set(PDFName.of('Count'), PDFNumber.of(-sub.count)); // closed by default
      }
      count += 1;
      ctx.assign(refs[i]!, dict);
    });
    return { first: refs[0]!, last: refs[refs.length - 1]!, count };
  };
  const top = build(nodes, rootRef);
  ctx.assign(rootRef, ctx.obj({ Type: 'Outlines', First: top.first, Last: top.last, Count: top.count }));
  doc.catalog.set(PDFName.of('Outlines'), rootRef);
}
