# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The walk of :class:`scrapy_simhash.fingerprinting.extract._Walker`, compiled.

It returns exactly what ``_Walker._run`` returns (``tests/test_walk.py`` checks
both on the corpus and on generated trees), but reads libxml2's nodes through
lxml's C API instead of making an lxml element object for every element and
calling it for its tag, attributes, text and tail: that was most of a
fingerprint's time. Element objects are made only for what Python needs:
the soft-dropped subtrees of the walks the main text is chosen from; the
walks that read every visible block afterwards (:func:`all_blocks`, as
``extract._all_blocks``) make none. The rules stay
in Python (:func:`scrapy_simhash.fingerprinting.extract._tag_code` and friends), so there is
one definition of them. One more walk of the same kind reads a page's links
(:func:`hrefs`, as :func:`scrapy_simhash.links.page_links`).
"""

from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.unicode cimport Py_UNICODE_ISSPACE, PyUnicode_DecodeUTF8
from libc.string cimport memcpy, strcmp, strlen

cimport lxml.includes.etreepublic as cetree
from lxml.includes cimport tree

cetree.import_lxml__etree()

# Tag codes: the bits of extract.TAG_BITS (tests/test_walk.py checks TAG_BITS
# below equals it).
cdef enum:
    SKIP = 1
    DROP_TAG = 2
    HEADER = 4
    NAMED = 8
    IS_LINK = 16
    IS_MAIN = 32
    BLOCK = 64
    KIND_SHIFT = 8

TAG_BITS = {
    "SKIP": SKIP, "DROP_TAG": DROP_TAG, "HEADER": HEADER, "NAMED": NAMED,
    "IS_LINK": IS_LINK, "IS_MAIN": IS_MAIN, "BLOCK": BLOCK, "KIND_SHIFT": KIND_SHIFT,
}

cdef enum:
    CACHE_SIZE = 256  # tag name pointer -> code, per walk (a power of two)


cdef inline bint _is_text(tree.xmlNode* c) noexcept nogil:
    return c.type == tree.XML_TEXT_NODE or c.type == tree.XML_CDATA_SECTION_NODE


cdef inline tree.xmlNode* _text_or_skip(tree.xmlNode* c) noexcept nogil:
    # lxml's _textNodeOrSkip: text and CDATA nodes make .text/.tail, XInclude
    # markers are stepped over, anything else ends them.
    while c is not NULL:
        if _is_text(c):
            return c
        if c.type == tree.XML_XINCLUDE_START or c.type == tree.XML_XINCLUDE_END:
            c = c.next
        else:
            return NULL
    return NULL


cdef inline bint _is_ascii_space(unsigned char b) noexcept nogil:
    # str.isspace() over ASCII: \t \n \v \f \r, \x1c-\x1f and the space.
    return b == 32 or 9 <= b <= 13 or 28 <= b <= 31


cdef inline bint _is_script(tree.xmlNode* c) noexcept nogil:
    # script style noscript template, without a namespace (as lxml's iter())
    cdef const char* name = <const char*>c.name
    return c.ns is NULL and (
        strcmp(name, "script") == 0 or strcmp(name, "style") == 0
        or strcmp(name, "noscript") == 0 or strcmp(name, "template") == 0
    )


cdef inline tree.xmlNode* _next_in(tree.xmlNode* c, tree.xmlNode* el) noexcept nogil:
    # The node after c in document order, inside el (NULL past its end); only
    # elements are entered (an entity reference's content is not text, as for lxml).
    if c.children is not NULL and c.type == tree.XML_ELEMENT_NODE:
        return c.children
    while c.next is NULL:
        c = c.parent
        if c is el or c is NULL:
            return NULL
    return c.next


cdef inline Py_ssize_t _code_points(const unsigned char* s) noexcept nogil:
    cdef Py_ssize_t n = 0
    while s[0]:
        if (s[0] & 0xC0) != 0x80:
            n += 1
        s += 1
    return n


cdef Py_ssize_t _dropped_chars(
    tree.xmlNode* el, Py_ssize_t* chars_left, Py_ssize_t* elements_left
) noexcept:
    """``extract._measure``: the length of the text of ``el``'s subtree with
    runs of whitespace counted as one space, less the text of the scripts and
    styles inside it, counted in one pass over the subtree. Both budgets are
    reduced by what was read, or set to -1 (spent) when it holds more than
    ``chars_left`` characters or ``elements_left`` elements."""
    cdef tree.xmlNode* c = el.children
    cdef tree.xmlNode* t
    cdef const unsigned char* s
    cdef Py_UCS4 ch
    cdef Py_ssize_t nonspace = 0, words = 0, scripts = 0, read = 0, elements = 0
    cdef bint in_word = False
    cdef unsigned char b
    while c is not NULL:
        if _is_text(c):
            s = <const unsigned char*>c.content
            while s is not NULL and s[0]:
                b = s[0]
                if b < 0x80:
                    ch = b
                    s += 1
                elif b >= 0xC0 and (s[1] & 0xC0) == 0x80:
                    if b < 0xE0:
                        ch = ((b & 0x1F) << 6) | (s[1] & 0x3F)
                        s += 2
                    elif (s[2] & 0xC0) != 0x80:
                        ch = 0xFFFD
                        s += 1
                    elif b < 0xF0:
                        ch = ((b & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F)
                        s += 3
                    elif (s[3] & 0xC0) == 0x80:
                        ch = (((b & 0x07) << 18) | ((s[1] & 0x3F) << 12)
                              | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F))
                        s += 4
                    else:
                        ch = 0xFFFD
                        s += 1
                else:  # not UTF-8 (libxml2 does not store such text)
                    ch = 0xFFFD
                    s += 1
                read += 1
                if Py_UNICODE_ISSPACE(ch):
                    in_word = False
                else:
                    nonspace += 1
                    if not in_word:
                        words += 1
                        in_word = True
            if read > chars_left[0]:
                chars_left[0] = elements_left[0] = -1
                return 0
        elif c.type == tree.XML_ELEMENT_NODE:
            elements += 1
            if elements > elements_left[0]:
                chars_left[0] = elements_left[0] = -1
                return 0
            if _is_script(c):
                t = _text_or_skip(c.children)
                while t is not NULL:
                    if t.content is not NULL:
                        scripts += _code_points(<const unsigned char*>t.content)
                    t = _text_or_skip(t.next)
        c = _next_in(c, el)
    chars_left[0] -= read
    elements_left[0] -= elements
    return (nonspace + words - 1 if words else 0) - scripts


cdef class _Nested:
    """A soft-dropped subtree met by a walk of :func:`all_blocks`: its node
    and how the walk met it (what ``extract._Dropped`` holds, but no element
    object and no measure: nothing reads them past that function)."""
    cdef tree.xmlNode* node
    cdef int kind, depth
    cdef bint in_link, in_main, weak


cdef class _State:
    cdef cetree._Document doc
    cdef char* buf
    cdef Py_ssize_t size, capacity
    cdef Py_ssize_t link, chars, elements, read, scan_chars, scan_elements, name_chars, first_item
    cdef bint nested  # the walks of all_blocks: placeholders are _Nested
    cdef Py_ssize_t max_chars, max_elements, max_read, max_scan, max_attribute, cached_value
    cdef Py_ssize_t max_items
    cdef int max_depth
    cdef list items, spans
    cdef dict names
    cdef object tag_code, boiler_name, boiler_name_long, hides, dropped
    cdef const void* cache_names[CACHE_SIZE]
    cdef int cache_codes[CACHE_SIZE]
    cdef int cached

    def __dealloc__(self):
        PyMem_Free(self.buf)

    cdef int add(self, const char* data, Py_ssize_t size, bint in_link) except -1:
        """Append text, cut where :data:`MAX_READ_CHARS` runs out."""
        cdef Py_ssize_t need, i, points = 0, left = self.max_read - self.read
        cdef char* grown
        for i in range(size):  # characters, not bytes: the non-continuation bytes
            if (<unsigned char>data[i] & 0xC0) != 0x80:
                if points == left:
                    size = i
                    break
                points += 1
        self.read += points
        if in_link:
            self.link += points
        need = self.size + size
        if need > self.capacity:
            need = max(need, 2 * self.capacity, 256)
            grown = <char*>PyMem_Realloc(self.buf, need)
            if grown is NULL:
                raise MemoryError()
            self.buf, self.capacity = grown, need
        memcpy(self.buf + self.size, data, size)
        self.size += size
        return 0

    cdef int add_text(self, tree.xmlNode* c, bint in_link) except -1:
        """Append the text of the text nodes starting at ``c`` (.text or .tail)."""
        c = _text_or_skip(c)
        while c is not NULL:
            if c.content is not NULL and c.content[0] != 0:
                self.add(<const char*>c.content, strlen(<const char*>c.content), in_link)
            c = _text_or_skip(c.next)
        return 0

    cdef int add_str(self, str text, bint in_link) except -1:
        cdef bytes data
        if text:
            data = text.encode("utf-8")
            self.add(data, len(data), in_link)
        return 0

    cdef int flat(self, tree.xmlNode* el, bint in_link) except -1:
        """``extract._flat_text`` into the block: the text of ``el``'s subtree
        (scripts' included), until MAX_READ_CHARS is reached or past the
        elements left."""
        cdef tree.xmlNode* c = el.children
        cdef Py_ssize_t left = self.max_elements - self.elements, visited = 0
        while c is not NULL:
            if _is_text(c):
                if c.content is not NULL and c.content[0] != 0:
                    self.add(<const char*>c.content, strlen(<const char*>c.content), in_link)
                    if self.read >= self.max_read:
                        break
            elif c.type == tree.XML_ELEMENT_NODE:
                visited += 1
                if visited > left:
                    break
            c = _next_in(c, el)
        self.elements += visited
        return 0

    cdef int flush(self, int kind) except -1:
        cdef Py_ssize_t i
        cdef bint blank = True
        cdef str text
        for i in range(self.size):
            if not _is_ascii_space(<unsigned char>self.buf[i]):
                blank = False
                break
        if not blank:
            text = PyUnicode_DecodeUTF8(self.buf, self.size, NULL)
            if not text.isspace():
                self.items.append((text, kind, self.link))
                self.chars += len(text)
        self.size = 0
        self.link = 0
        return 0

    cdef int rule(self, tree.xmlNode* c) except -1:
        """The tag code of an element (cached by name pointer: libxml2's
        parsers intern names, and a tree is not modified during a walk)."""
        cdef size_t slot
        cdef int code
        cdef str name = None
        if c.ns is not NULL and c.ns.href is not NULL:
            name = "{%s}%s" % (
                (<const char*>c.ns.href).decode("utf-8"), (<const char*>c.name).decode("utf-8")
            )
            return self.tag_code(name)
        slot = (<size_t>c.name >> 4) & (CACHE_SIZE - 1)
        while self.cache_names[slot] is not NULL:
            if self.cache_names[slot] == <const void*>c.name:
                return self.cache_codes[slot]
            slot = (slot + 1) & (CACHE_SIZE - 1)
        code = self.tag_code((<const char*>c.name).decode("utf-8"))
        if self.cached < CACHE_SIZE // 2:  # keeps probes short and ending
            self.cache_names[slot] = <const void*>c.name
            self.cache_codes[slot] = code
            self.cached += 1
        return code

    cdef object attribute(self, tree.xmlNode* c, tree.xmlAttr* attr):
        """An attribute's value, its first ``max_attribute`` characters only
        (``extract._cut``)."""
        cdef tree.xmlNode* t = attr.children
        cdef const unsigned char* s
        cdef Py_ssize_t n = 0, points = 0
        cdef str value
        if t is NULL:
            return ""
        if t.next is NULL and t.type == tree.XML_TEXT_NODE and t.content is not NULL:
            s = <const unsigned char*>t.content
            while s[n]:
                if (s[n] & 0xC0) != 0x80:
                    if points == self.max_attribute:
                        break
                    points += 1
                n += 1
            return PyUnicode_DecodeUTF8(<const char*>s, n, NULL)
        # Entity references in the value: as lxml reads it.
        value = cetree.elementFactory(self.doc, c).get((<const char*>attr.name).decode("utf-8"))
        return value[:self.max_attribute]

    cdef bint boiler(self, tree.xmlNode* c, tree.xmlAttr* attr) except -1:
        """``extract._Walker.boiler``: each distinct value classified once per
        page, within the page's budget; short values through the cache."""
        cdef str value = self.attribute(c, attr)
        cdef object known = self.names.get(value)
        if known is not None:
            return known is True
        if len(value) > self.name_chars:
            self.name_chars = -1
            return False
        self.name_chars -= len(value)
        if len(value) <= self.cached_value:
            known = bool(self.boiler_name(value))
        else:
            known = bool(self.boiler_name_long(value))
        self.names[value] = known
        return known is True

    cdef object style(self, str value):
        """``extract._Walker.style``: None once the page's budget is spent."""
        if len(value) > self.name_chars:
            self.name_chars = -1
            return None
        self.name_chars -= len(value)
        return value

    cdef int named_drop(self, tree.xmlNode* c, bint* weak) except -1:
        """The class/id, hidden and landmark rules, on no-namespace attributes."""
        cdef tree.xmlAttr* attr = c.properties
        cdef tree.xmlAttr* klass = NULL
        cdef tree.xmlAttr* ident = NULL
        cdef tree.xmlAttr* aria = NULL
        cdef tree.xmlAttr* role = NULL
        cdef tree.xmlAttr* style = NULL
        cdef bint hidden = False
        cdef const char* name
        while attr is not NULL:
            if attr.ns is NULL:
                name = <const char*>attr.name
                if strcmp(name, "class") == 0:
                    klass = attr
                elif strcmp(name, "id") == 0:
                    ident = attr
                elif strcmp(name, "hidden") == 0:
                    hidden = True
                elif strcmp(name, "aria-hidden") == 0:
                    aria = attr
                elif strcmp(name, "role") == 0:
                    role = attr
                elif strcmp(name, "style") == 0:
                    style = attr
            attr = attr.next
        if klass is not NULL and self.boiler(c, klass):
            weak[0] = True
            return True
        if ident is not NULL and self.boiler(c, ident):
            weak[0] = True
            return True
        if hidden or aria is not NULL or role is not NULL or style is not NULL:
            return bool(self.hides(
                hidden,
                None if aria is NULL else self.attribute(c, aria),
                None if role is NULL else self.attribute(c, role),
                None if style is NULL else self.style(self.attribute(c, style)),
            ))
        return False

    cdef int walk(
        self, tree.xmlNode* el, int kind, bint in_link, bint in_main, int depth
    ) except -1:
        """Returns 1, or 0 when a budget ran out (the walk stops)."""
        cdef tree.xmlNode* c
        cdef int code, child_kind
        cdef bint drop, weak, child_link, child_main, block
        cdef Py_ssize_t first = 0, chars
        cdef tuple span
        self.add_text(el.children, in_link)
        depth += 1
        c = el.children
        while c is not NULL:
            if c.type == tree.XML_ELEMENT_NODE:
                self.elements += 1
                if (
                    self.elements > self.max_elements or self.chars > self.max_chars
                    or self.read >= self.max_read
                    or self.first_item + len(self.items) >= self.max_items
                ):
                    return 0
                if depth > self.max_depth:
                    self.flat(c, in_link)
                    code = SKIP
                else:
                    code = self.rule(c)
                if not code & SKIP:
                    weak = False
                    drop = (code & DROP_TAG) or ((code & HEADER) and not in_main)
                    if not drop and (code & NAMED) and c.properties is not NULL:
                        drop = self.named_drop(c, &weak)
                    child_kind = (code >> KIND_SHIFT) - 1 if code >> KIND_SHIFT else kind
                    child_link = in_link or (code & IS_LINK)
                    child_main = in_main or (code & IS_MAIN)
                    block = code & BLOCK
                    if drop and self.nested:
                        if self.size:
                            self.flush(kind)
                        self.items.append(_nested(c, child_kind, child_link, child_main, weak, depth))
                    elif drop:
                        if self.size:
                            self.flush(kind)
                        if self.scan_chars >= 0:
                            chars = _dropped_chars(c, &self.scan_chars, &self.scan_elements)
                        if self.scan_chars < 0:  # past the scan budgets: spent
                            chars = self.max_scan
                        self.items.append(self.dropped(
                            cetree.elementFactory(self.doc, c),
                            child_kind, child_link, child_main, weak, depth, chars,
                        ))
                    else:
                        if block:
                            if self.size:
                                self.flush(kind)
                            first = len(self.items)
                        if not self.walk(c, child_kind, child_link, child_main, depth):
                            return 0
                        if block:
                            if self.size:
                                self.flush(child_kind)
                            span = (first, len(self.items))
                            if len(self.items) > first and (
                                not self.spans or self.spans[len(self.spans) - 1] != span
                            ):  # (no negative index: wraparound is off)
                                self.spans.append(span)
                        elif self.size and child_kind != kind:
                            self.flush(child_kind)
                self.add_text(c.next, in_link)
            elif (
                c.type == tree.XML_COMMENT_NODE
                or c.type == tree.XML_PI_NODE
                or c.type == tree.XML_ENTITY_REF_NODE
            ):
                self.add_text(c.next, in_link)
            c = c.next
        return 1


cdef inline _Nested _nested(
    tree.xmlNode* node, int kind, bint in_link, bint in_main, bint weak, int depth
):
    cdef _Nested item = _Nested.__new__(_Nested)
    item.node, item.kind, item.in_link, item.in_main, item.weak, item.depth = (
        node, kind, in_link, in_main, weak, depth
    )
    return item


cdef _State _state(
    tuple used, tuple limits, tag_code, dict names, boiler_name, boiler_name_long, hides, dropped
):
    """A walk's state, from the budgets ``used`` so far and the ``limits``
    (see :func:`walk`)."""
    cdef _State state = _State.__new__(_State)
    (
        state.chars, state.elements, state.read, state.scan_chars, state.scan_elements,
        state.name_chars, state.first_item,
    ) = used
    (
        state.max_chars, state.max_elements, state.max_read, state.max_depth, state.max_scan,
        state.max_attribute, state.cached_value, state.max_items,
    ) = limits
    state.names = names
    state.tag_code, state.boiler_name, state.boiler_name_long = tag_code, boiler_name, boiler_name_long
    state.hides, state.dropped = hides, dropped
    return state


def walk(
    cetree._Element start not None,
    int kind,
    bint in_link,
    bint in_main,
    int depth,
    tuple used,
    tuple limits,
    tag_code,
    dict names,
    boiler_name,
    boiler_name_long,
    hides,
    dropped,
):
    """``(items, spans, chars, elements, read, scan_chars, scan_elements,
    name_chars)`` of the subtree of ``start``, given the budgets ``used`` so far
    (those and the items made) and the ``limits`` (MAX_TEXT_CHARS,
    MAX_ELEMENTS, MAX_READ_CHARS, MAX_DEPTH, MAX_SCAN_CHARS,
    MAX_ATTRIBUTE_CHARS, _CACHED_VALUE_CHARS, MAX_ITEMS); ``names`` is the
    page's class/id values already classified: see
    ``scrapy_simhash.fingerprinting.extract._Walker.run``."""
    cdef _State state = _state(used, limits, tag_code, names, boiler_name, boiler_name_long,
                               hides, dropped)
    state.doc = start._doc
    state.items, state.spans = [], []
    state.walk(start._c_node, kind, in_link, in_main, depth)
    if state.size:
        state.flush(kind)
    state.spans.append((0, len(state.items)))
    return (
        state.items, state.spans, state.chars, state.elements, state.read, state.scan_chars,
        state.scan_elements, state.name_chars,
    )


cdef inline bint _is_link(tree.xmlNode* c) noexcept nogil:
    # <a> without a namespace (as the XPath ``a``)
    return c.ns is NULL and strcmp(<const char*>c.name, "a") == 0


def subtree_text(cetree._Element el not None, Py_ssize_t chars_left):
    """``extract._subtree_text``: ``(text, link characters)`` of ``el``'s
    subtree, its tail left out (the text nodes ``etree.tostring(el,
    method="text")`` joins, and the characters of those inside an ``<a>``
    below ``el``), or None when it holds more than ``chars_left``
    characters, read in one pass that stops there."""
    return _subtree_text(el._c_node, chars_left)


cdef object _subtree_text(tree.xmlNode* top, Py_ssize_t chars_left):
    cdef tree.xmlNode* c = top.children
    cdef const unsigned char* s
    cdef Py_ssize_t n, points, read = 0, link = 0, links = 0, size = 0, capacity = 0
    cdef char* buf = NULL
    cdef char* grown
    try:
        while c is not NULL:
            if _is_text(c):
                if c.content is not NULL and c.content[0] != 0:
                    s = <const unsigned char*>c.content
                    n = strlen(<const char*>s)
                    points = _code_points(s)
                    read += points
                    if read > chars_left:
                        return None
                    if links:
                        link += points
                    if size + n > capacity:
                        capacity = max(size + n, 2 * capacity, 256)
                        grown = <char*>PyMem_Realloc(buf, capacity)
                        if grown is NULL:
                            raise MemoryError()
                        buf = grown
                    memcpy(buf + size, s, n)
                    size += n
            elif c.type == tree.XML_ELEMENT_NODE and c.children is not NULL:
                if _is_link(c):
                    links += 1
                c = c.children
                continue
            while c.next is NULL:  # up, out of the elements that end here
                c = c.parent
                if c is top or c is NULL:
                    c = NULL
                    break
                if _is_link(c):
                    links -= 1
            if c is not NULL:
                c = c.next
        return PyUnicode_DecodeUTF8(buf, size, NULL), link
    finally:
        PyMem_Free(buf)


cdef int _blocks_of(_State state, list items, dict walked, list out) except -1:
    """``extract._all_blocks`` over ``items`` into ``out``, in the same order
    (so the budgets run out at the same places)."""
    cdef object item, inner, read
    cdef _Nested nested
    cdef tree.xmlNode* node
    cdef int kind, depth
    cdef bint in_link, in_main, weak
    cdef str text
    cdef Py_ssize_t link
    for item in items:
        if type(item) is tuple:
            out.append(item)
            continue
        if type(item) is _Nested:
            nested = <_Nested>item
            node, kind, depth = nested.node, nested.kind, nested.depth
            in_link, in_main, weak = nested.in_link, nested.in_main, nested.weak
            inner = None
        else:  # extract._Dropped, from the walks before
            node = (<cetree._Element?>item.el)._c_node
            kind, depth, in_link, in_main, weak = (
                item.kind, item.depth, item.in_link, item.in_main, item.weak
            )
            if state.doc is None:
                state.doc = (<cetree._Element>item.el)._doc
            inner = walked.get(item) if weak else None
        if weak:
            if inner is None and state.first_item < state.max_items:
                inner = _nested_walk(state, node, kind, in_link, in_main, depth)
            if inner is not None:
                _blocks_of(state, <list>inner, walked, out)
                continue
        read = _subtree_text(node, state.max_read - state.read)
        if read is None:
            state.read = state.max_read  # cut: the page's text is not all there
            break
        text, link = read
        state.read += len(text)
        text = " ".join(text.split())
        if text:
            out.append((text, kind, len(text) if in_link else min(link, len(text))))
    return 0


cdef list _nested_walk(
    _State state, tree.xmlNode* node, int kind, bint in_link, bint in_main, int depth
):
    """The items of one soft-dropped subtree, as ``extract._Walker.run``
    walks it (``state.first_item`` counts the items made, as
    ``_Walker.items``)."""
    cdef list items = []
    state.items, state.spans = items, []
    state.size = state.link = 0
    state.walk(node, kind, in_link, in_main, depth)
    if state.size:
        state.flush(kind)
    state.first_item += len(items)
    return items


def all_blocks(
    list items,
    dict walked,
    tuple used,
    tuple limits,
    tag_code,
    dict names,
    boiler_name,
    boiler_name_long,
    hides,
):
    """``(blocks, chars, elements, read, items, name_chars)``: ``extract._all_blocks`` of
    the ``items`` of a page's first walk (``walked``: the placeholders the
    walks before read, and their items), given the budgets ``used`` so far and
    the ``limits`` as :func:`walk` takes them. The soft-dropped subtrees it
    walks make no element objects; their measures (and the scan budgets) are
    left out, as nothing reads them past this."""
    cdef _State state = _state(used, limits, tag_code, names, boiler_name, boiler_name_long,
                               hides, None)
    cdef list out = []
    state.nested = True
    _blocks_of(state, items, walked, out)
    return out, state.chars, state.elements, state.read, state.first_item, state.name_chars


cdef inline bint _is_anchor(tree.xmlNode* c) noexcept nogil:
    # an ``a`` or ``area`` element without a namespace (as lxml's iter("a", "area"))
    cdef const char* name = <const char*>c.name
    if c.type != tree.XML_ELEMENT_NODE or name[0] != b"a":
        return False
    if c.ns is not NULL and c.ns.href is not NULL and c.ns.href[0] != 0:
        return False
    return name[1] == 0 or strcmp(name, "area") == 0


cdef inline bint _declares_attributes(tree.xmlDoc* doc) noexcept nogil:
    # a DTD declaring attributes, whose defaults lxml's get() reads (an XML tree:
    # the HTML parser reads no declarations)
    return doc is not NULL and (
        (doc.intSubset is not NULL and doc.intSubset.attributes is not NULL)
        or (doc.extSubset is not NULL and doc.extSubset.attributes is not NULL))


def hrefs(cetree._Element root not None, Py_ssize_t limit):
    """``links.page_links``: the ``href`` of each ``a`` and ``area`` element of
    ``root``'s tree (itself included) in document order, ``limit`` + 1 at most."""
    cdef tree.xmlNode* top = root._c_node
    cdef tree.xmlNode* c = top
    cdef tree.xmlAttr* attr
    cdef tree.xmlNode* t
    cdef bint declared = _declares_attributes(top.doc)
    cdef object value
    cdef list out = []
    while c is not NULL:
        if _is_anchor(c):
            attr = c.properties
            while attr is not NULL:
                if attr.ns is NULL and strcmp(<const char*>attr.name, "href") == 0:
                    break
                attr = attr.next
            t = attr.children if attr is not NULL else NULL
            if attr is not NULL and t is NULL:
                value = ""
            elif t is not NULL and t.next is NULL and t.type == tree.XML_TEXT_NODE \
                    and t.content is not NULL:
                value = PyUnicode_DecodeUTF8(<const char*>t.content,
                                             strlen(<const char*>t.content), NULL)
            elif attr is not NULL or declared:
                # entity references in the value, or a default a DTD may give it:
                # as lxml reads them
                value = cetree.elementFactory(root._doc, c).get("href")
            else:
                value = None
            if value is not None:
                out.append(value)
                if len(out) > limit:
                    return out
        if c is top:
            c = top.children if top.type == tree.XML_ELEMENT_NODE else NULL
        else:
            c = _next_in(c, top)
    return out
