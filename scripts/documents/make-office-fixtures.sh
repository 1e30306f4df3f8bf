#!/usr/bin/env bash
# Office fixtures made by the software that makes them in the wild: LibreOffice headless converts the
# sources office-sources.py writes (HTML, flat ODP, flat ODS) to DOCX, ODT, PPTX and XLSX; Python's email
# and csv packages write the EML and CSV. Output: test/fixtures/documents/ (committed; re-run to refresh).
# Needs: libreoffice-writer libreoffice-impress libreoffice-calc (Debian), /usr/bin/python3.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/test/fixtures/documents"
src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT
mkdir -p "$out"
/usr/bin/python3 "$root/scripts/documents/office-sources.py" "$src"
cp "$src/mail.eml" "$src/table.csv" "$out/"
lo() { soffice -env:UserInstallation="file://$src/profile" --headless "${@:3}" --convert-to "$1" --outdir "$src/out" "$2" >/dev/null; }
# HTML opened as a Writer text document (not Writer/Web, whose ODT is text-web).
lo 'docx:MS Word 2007 XML' "$src/report.html" '--infilter=HTML (StarWriter)'
lo 'odt:writer8' "$src/report.html" '--infilter=HTML (StarWriter)'
lo 'pptx:Impress MS PowerPoint 2007 XML' "$src/deck.fodp"
lo 'xlsx:Calc MS Excel 2007 XML' "$src/book.fods"
cp "$src/out/report.docx" "$src/out/report.odt" "$src/out/deck.pptx" "$src/out/book.xlsx" "$out/"
ls -l "$out"
