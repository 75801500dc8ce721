/* SPDX-License-Identifier: MIT */
/*
 * demangle.h - how khprof shows a function's name: the record keeps the
 * symbol as the file has it (mangled, for Rust and C++), and every output
 * that names a function demangles it here (docs/SAMPLING.md, "Names").
 */
#ifndef KHPROF_DEMANGLE_H
#define KHPROF_DEMANGLE_H

/*
 * The name as khprof shows it: a Rust (legacy `_ZN...17h<hash>E` or v0
 * `_R...`) or C++ (Itanium `_Z...`) symbol demangled, without Rust's
 * `::h<hash>` and LLVM's `.llvm.N` clone suffixes (C++ parameters and
 * GCC's `[clone .cold]` kept); any other name as it is (a C function,
 * `[libc.so.6]`, `[jit]`), `.llvm.N` aside.  malloc'd; NULL without memory.
 */
char *kh_name__demangle(const char *name);

/*
 * A demangled name shortened for a table: generic and template arguments
 * as `<…>`, a parameter list as `(…)` (`()` when empty), a Rust generic
 * function's arguments left out (`sift::<S>` is `sift`, as the legacy
 * scheme names it), and the types of a leading Rust qualified path by
 * their last segment:
 * `<regex_syntax::hir::ClassUnicodeRange as regex_syntax::hir::interval::Interval>::case_fold_simple`
 * is `<ClassUnicodeRange as Interval>::case_fold_simple`,
 * `<alloc::vec::Vec<u8>>::push` is `alloc::vec::Vec<…>::push`.  A name whose brackets
 * do not pair is returned whole.  malloc'd; NULL without memory.
 */
char *kh_name__shorten(const char *shown);

#endif /* KHPROF_DEMANGLE_H */
