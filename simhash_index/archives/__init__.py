"""Web archives (WARC, and ARC read as WARC): their records read and checked against their framing
(framing.py, with warcio), which records are pages and their payloads (records.py, payloads.py),
and a copy of archives without some of their responses (copying.py)."""
