// The WebAssembly kernels' heap (malloc, calloc, aligned_alloc, free, 16-byte aligned) in place of wasi-libc's,
// which cannot be linked into a module whose memory is shared with worker threads (it is built without atomics).
// First fit over a free list in address order, neighbours merged when a block is freed, and a free block at the
// top given back to the top. One lock: the caller allocates for every call, the workers only in attention units.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

// A block: its size (this header included, a multiple of 16), then, while free, the next free block.
typedef struct Block {
  size_t size;
  struct Block *next;
  size_t pad[2];
} Block;

_Static_assert(sizeof(Block) == 16, "a block's header keeps its payload 16-byte aligned");

extern unsigned char __heap_base;  // set by the linker: the end of the data and the stack

static Block *free_blocks;  // in address order
static uintptr_t top, end;  // the unused rest of the heap: [top, end)
static int locked;

static void lock(void) {
  while (__atomic_exchange_n(&locked, 1, __ATOMIC_ACQUIRE)) {}
}

static void unlock(void) {
  __atomic_store_n(&locked, 0, __ATOMIC_RELEASE);
}

static Block *take(size_t size) {
  for (Block **at = &free_blocks; *at; at = &(*at)->next) {
    Block *b = *at;
    if (b->size < size) continue;
    if (b->size - size < 64) {
      *at = b->next;
      return b;
    }
    b->size -= size;  // the block's end serves: the free part stays where it is in the list
    Block *tail = (Block *)((uintptr_t)b + b->size);
    tail->size = size;
    return tail;
  }
  if (!top) top = ((uintptr_t)&__heap_base + 15) & ~(uintptr_t)15, end = __builtin_wasm_memory_size(0) * 65536;
  if (size > end - top) {
    const size_t pages = (size - (end - top) + 65535) / 65536;
    if (__builtin_wasm_memory_grow(0, pages) == (size_t)-1) return NULL;
    end = __builtin_wasm_memory_size(0) * 65536;  // the memory's maximum is below 4 GiB: this does not wrap
  }
  Block *b = (Block *)top;
  top += size;
  b->size = size;
  return b;
}

void *malloc(size_t bytes) {
  if (bytes > SIZE_MAX - 64) return NULL;
  const size_t size = ((bytes + 15) & ~(size_t)15) + sizeof(Block);
  lock();
  Block *b = take(size);
  unlock();
  return b ? b + 1 : NULL;
}

void *aligned_alloc(size_t alignment, size_t bytes) {
  return alignment <= 16 ? malloc(bytes) : NULL;
}

void *calloc(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  void *p = malloc(count * size);
  if (p) memset(p, 0, count * size);
  return p;
}

void free(void *p) {
  if (!p) return;
  Block *b = (Block *)p - 1;
  lock();
  Block **link = &free_blocks, **before = NULL;
  while (*link && *link < b) before = link, link = &(*link)->next;
  b->next = *link;
  *link = b;
  if (b->next && (uintptr_t)b + b->size == (uintptr_t)b->next) b->size += b->next->size, b->next = b->next->next;
  if (before && (uintptr_t)*before + (*before)->size == (uintptr_t)b) {
    (*before)->size += b->size, (*before)->next = b->next;
    link = before, b = *before;
  }
  if (!b->next && (uintptr_t)b + b->size == top) top = (uintptr_t)b, *link = NULL;
  unlock();
}
