"""Writes the sources LibreOffice converts into the office fixtures (see make-office-fixtures.sh), and the
EML and CSV fixtures themselves, written by Python's own email and csv packages.

The text is the one test/routes/documents/make-docs.ts uses, so the tests compare against the same constants.
"""
import csv
import io
import sys
from email.headerregistry import Address
from email.message import EmailMessage
from html import escape
from pathlib import Path

out = Path(sys.argv[1])
TITLE = 'Document Understanding Report'
INTRO = ('Documents arrive in many shapes. This report describes how the service reads portable documents with two '
         'columns, headings, lists and tables, and how it keeps the reading order a person would follow.')
METHODS = 'We measured extraction quality on a small set of generated pages with known content.'
LIST = ['Text layers are read with their positions', 'Columns are found from vertical gutters', 'Tables come from aligned cells']
CONCLUSION = 'Layout analysis over a text layer is fast, and scanned pages can take the OCR path instead.'
TABLE = [['Name', 'Value', 'Unit'], ['Alpha', '1.5', 'kg'], ['Beta', '2.25', 'm'], ['Gamma', '3.0', 's']]

# Writer: HTML import → DOCX and ODT (headings, a bullet list, a table with a header row).
rows = ''.join('<tr>' + ''.join(f'<{"th" if i == 0 else "td"}>{escape(c)}</{"th" if i == 0 else "td"}>' for c in r) + '</tr>'
               for i, r in enumerate(TABLE))
(out / 'report.html').write_text(f'''<!DOCTYPE html><html><head><meta charset="utf-8"><title>{TITLE}</title></head><body>
<h1>{TITLE}</h1><h2>1 Introduction</h2><p>{escape(INTRO)}</p><h2>2 Methods</h2><p>{escape(METHODS)}</p>
<ul>{''.join(f'<li>{escape(x)}</li>' for x in LIST)}</ul>
<table border="1">{rows}</table><p>{escape(CONCLUSION)}</p></body></html>''', encoding='utf-8')

# Impress: a flat ODP with a title slide (subtitle with a line break), a bullet slide and a table slide.
NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
      'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
      'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
      'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
      'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
      'xmlns:fo="urn:oasis:names:compatible:xmlns:xsl-fo-compatible:1.0" '
      'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
      'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"')
def frame(cls, body, y):
    return (f'<draw:frame presentation:class="{cls}" svg:x="2cm" svg:y="{y}cm" svg:width="24cm" svg:height="3cm">'
            f'<draw:text-box>{body}</draw:text-box></draw:frame>')
cells = ''.join('<table:table-row>' + ''.join(f'<table:table-cell><text:p>{escape(c)}</text:p></table:table-cell>' for c in r)
                + '</table:table-row>' for r in TABLE)
table = (f'<draw:frame svg:x="2cm" svg:y="5cm" svg:width="20cm" svg:height="6cm"><table:table>'
         f'<table:table-columns><table:table-column/><table:table-column/><table:table-column/></table:table-columns>{cells}'
         '</table:table></draw:frame>')
slides = [
    ('Opening', frame('title', '<text:p>Opening</text:p>', 1)
     + frame('subtitle', '<text:p>First line<text:line-break/>Second line</text:p>', 6)),
    ('Points', frame('title', '<text:p>Points</text:p>', 1)
     + frame('outline', '<text:list>' + ''.join(f'<text:list-item><text:p>{escape(x)}</text:p></text:list-item>' for x in LIST) + '</text:list>', 5)),
    ('Numbers', frame('title', '<text:p>Numbers</text:p>', 1) + table),
]
pages = ''.join(f'<draw:page draw:name="{n}" draw:master-page-name="Default" presentation:presentation-page-layout-name="AL1T1">{b}</draw:page>' for n, b in slides)
(out / 'deck.fodp').write_text(f'''<?xml version="1.0" encoding="UTF-8"?>
<office:document {NS} office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.presentation">
<office:styles><style:presentation-page-layout style:name="AL1T1"><presentation:placeholder presentation:object="title" svg:x="2cm" svg:y="1cm" svg:width="24cm" svg:height="3cm"/><presentation:placeholder presentation:object="outline" svg:x="2cm" svg:y="5cm" svg:width="24cm" svg:height="12cm"/></style:presentation-page-layout></office:styles>
<office:master-styles><style:master-page style:name="Default"><draw:frame presentation:class="title" presentation:placeholder="true" svg:x="2cm" svg:y="1cm" svg:width="24cm" svg:height="3cm"><draw:text-box/></draw:frame><draw:frame presentation:class="outline" presentation:placeholder="true" svg:x="2cm" svg:y="5cm" svg:width="24cm" svg:height="12cm"><draw:text-box/></draw:frame></style:master-page></office:master-styles>
<office:body><office:presentation>{pages}</office:presentation></office:body></office:document>''', encoding='utf-8')

# Calc: a flat ODS with two sheets (numbers stay numbers).
def ods_cell(c):
    try:
        float(c)
        return f'<table:table-cell office:value-type="float" office:value="{c}"><text:p>{c}</text:p></table:table-cell>'
    except ValueError:
        return f'<table:table-cell office:value-type="string"><text:p>{escape(c)}</text:p></table:table-cell>'
def sheet(name, rows):
    return f'<table:table table:name="{name}">' + ''.join('<table:table-row>' + ''.join(ods_cell(c) for c in r) + '</table:table-row>' for r in rows) + '</table:table>'
(out / 'book.fods').write_text(f'''<?xml version="1.0" encoding="UTF-8"?>
<office:document {NS} office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.spreadsheet">
<office:body><office:spreadsheet>{sheet('Measurements', TABLE)}{sheet('Notes', [['Key', 'Note'], ['k1', 'first note']])}</office:spreadsheet></office:body></office:document>''', encoding='utf-8')

# EML: multipart/mixed (alternative text + HTML, then an attachment), non-ASCII subject and sender.
msg = EmailMessage()
msg['From'] = Address('Zoë Example', addr_spec='zoe@example.com')
msg['To'] = 'bob@example.com'
msg['Subject'] = 'Quarterly numbers — Q3'
msg['Date'] = 'Mon, 05 Oct 2026 10:00:00 +0000'
msg.set_content('Hello Bob,\n\nThe numbers are in — see below.\n')
html_rows = ''.join('<tr>' + ''.join(f'<{"th" if i == 0 else "td"}>{c}</{"th" if i == 0 else "td"}>' for c in r) + '</tr>' for i, r in enumerate(TABLE))
msg.add_alternative(f'<p>Hello Bob,</p><p>The numbers are in — see below.</p><table>{html_rows}</table>', subtype='html')
msg.add_attachment(b'Name,Value\r\nAlpha,1.5\r\n', maintype='text', subtype='csv', filename='numbers.csv')
(out / 'mail.eml').write_bytes(bytes(msg))

# CSV: quoting, an embedded comma, quote and newline, UTF-8.
buf = io.StringIO()
w = csv.writer(buf)
w.writerows([['Name', 'Note', 'Value'], ['Alpha', 'plain', '1.5'], ['Beta', 'has, comma', '2.25'],
             ['Gamma', 'says "hi"', '3.0'], ['Delta', 'two\nlines', '4'], ['Eta', 'ünïcödé', '5']])
(out / 'table.csv').write_text(buf.getvalue(), encoding='utf-8')
