"""The signal SimhashDedupPipeline sends when a page supersedes one it kept before.

    page_superseded(old_key, new_key, evidence, item, spider)

With a survivor policy (SIMHASH_PREFER), a page may be preferred to the stored page it
duplicates: the new page's item is kept and passed on, and the stored page becomes its
duplicate. `old_key` is the page kept before (the item a storage pipeline stored then),
`new_key` the page now kept (its `item` passes on), `evidence` the Match between them
(distance, similarity, exact, and `superseded`: why, "longer", "newer" or "preferred").
"""

from __future__ import annotations

page_superseded = object()
