//! Generates the compile test of the seed's API from the seed's own source
//! (KH_SEED_LIB, the seed's keyhog_profile_lib.rs), so that the test is
//! the seed's public surface as it is, not as someone remembered it.  The
//! source is parsed with syn (Debian's librust-syn-dev), and for every
//! public item this writes code that compiles only if `keyhog_profile`
//! -- the seed or this project's crate under the seed's name -- has the
//! item with the seed's signature:
//!
//! - a constant: read into a constant of the seed's type;
//! - a function or method: a wrapper with the seed's parameters and
//!   return type calling it, and, without generics, the function as a
//!   function pointer of the seed's exact type; a `const fn` method of an
//!   enum is also called in a constant;
//! - a struct: a literal of every field with the seed's type (so no field
//!   is missing and none is added), or the unit value;
//! - an enum: an exhaustive match of the seed's variants (none missing,
//!   none added) and each variant's discriminant asserted;
//! - each derive and trait impl: a bound the type must satisfy.
//!
//! What types cannot say is checked when the program runs
//! (`runtime_checks`): the serde name of every enum variant (the seed's
//! `rename_all`), the `#[default]` variant.  Fields with `#[serde(default)]`
//! are listed (`SERDE_DEFAULT_FIELDS`) for the program to check on a real
//! record.  With KH_SEED_DOCS (the seed's docs page), every item the page
//! lists must be among the public items found, or the build fails: the
//! parse left nothing out.

use proc_macro2::{Group, Ident, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, ToTokens};
use std::collections::BTreeSet;
use std::env;
use std::fs;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-env-changed=KH_SEED_LIB");
    println!("cargo:rerun-if-env-changed=KH_SEED_DOCS");
    let lib = env::var("KH_SEED_LIB").expect(
        "KH_SEED_LIB must name the seed's keyhog_profile_lib.rs (scripts/build-rust.sh sets it)",
    );
    println!("cargo:rerun-if-changed={lib}");
    let source = fs::read_to_string(&lib).unwrap_or_else(|e| panic!("cannot read '{lib}': {e}"));
    let file = syn::parse_file(&source).unwrap_or_else(|e| panic!("cannot parse '{lib}': {e}"));

    let mut generated = Generated::default();
    for item in &file.items {
        generated.item(item);
    }
    if let Ok(docs) = env::var("KH_SEED_DOCS") {
        println!("cargo:rerun-if-changed={docs}");
        let text =
            fs::read_to_string(&docs).unwrap_or_else(|e| panic!("cannot read '{docs}': {e}"));
        generated.check_against_docs(&text);
    }
    let out = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("seed_api.rs");
    fs::write(&out, generated.render())
        .unwrap_or_else(|e| panic!("cannot write '{}': {e}", out.display()));
}

#[derive(Default)]
struct Generated {
    /// The seed's own `use` items, so that its types read the same here.
    uses: Vec<TokenStream>,
    /// Items that compile only against the seed's API.
    checks: Vec<TokenStream>,
    /// Statements of `runtime_checks`.
    runtime: Vec<TokenStream>,
    /// Public items found at the top level, by name.
    items: BTreeSet<String>,
    /// (type, field) with `#[serde(default)]`.
    serde_defaults: Vec<(String, String)>,
    /// Enums and their first variant, for const-fn checks.
    first_variant: Vec<(String, Ident)>,
    /// Public in the source, not on the docs page.
    undocumented: Vec<String>,
}

fn is_pub(vis: &syn::Visibility) -> bool {
    matches!(vis, syn::Visibility::Public(_))
}

/// Replaces `Self` with the impl's type, everywhere in a signature.
fn replace_self(tokens: TokenStream, with: &TokenStream) -> TokenStream {
    tokens
        .into_iter()
        .flat_map(|tree| -> Vec<TokenTree> {
            match tree {
                TokenTree::Ident(ref ident) if ident == "Self" => {
                    with.clone().into_iter().collect()
                }
                TokenTree::Group(group) => {
                    let mut replaced =
                        Group::new(group.delimiter(), replace_self(group.stream(), with));
                    replaced.set_span(group.span());
                    vec![TokenTree::Group(replaced)]
                }
                other => vec![other],
            }
        })
        .collect()
}

/// Whether a type mentions `impl Trait` (no function pointer then).
fn has_impl_trait(tokens: &TokenStream) -> bool {
    tokens.clone().into_iter().any(|tree| match tree {
        TokenTree::Ident(ident) => ident == "impl",
        TokenTree::Group(group) => has_impl_trait(&group.stream()),
        _ => false,
    })
}

/// The traits `#[derive(...)]` lists, by their last path segment.
fn derives(attrs: &[syn::Attribute]) -> Vec<String> {
    let mut found = Vec::new();
    for attr in attrs.iter().filter(|attr| attr.path.is_ident("derive")) {
        let list: syn::punctuated::Punctuated<syn::Path, syn::Token![,]> = attr
            .parse_args_with(syn::punctuated::Punctuated::parse_terminated)
            .expect("derive lists paths");
        for path in list {
            found.push(path.segments.last().expect("a path has a segment").ident.to_string());
        }
    }
    found
}

/// The bound a derived trait gives, as a path the generated file can name.
fn derive_bound(name: &str) -> TokenStream {
    match name {
        "Serialize" => quote!(serde::Serialize),
        "Deserialize" => quote!(serde::de::DeserializeOwned),
        "Debug" => quote!(std::fmt::Debug),
        "Hash" => quote!(std::hash::Hash),
        "Clone" | "Copy" | "Default" | "Eq" | "PartialEq" | "PartialOrd" | "Ord" => {
            let ident = Ident::new(name, Span::call_site());
            quote!(#ident)
        }
        other => panic!("the seed derives '{other}', which this generator does not know: add it"),
    }
}

/// `#[serde(...)]` arguments as text, e.g. `rename_all = "kebab-case"`.
fn serde_args(attrs: &[syn::Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|attr| attr.path.is_ident("serde"))
        .map(|attr| attr.tokens.to_string())
        .collect()
}

/// A variant's serde name under the enum's `rename_all`, as serde spells it.
fn serde_variant_name(variant: &str, rename_all: Option<&str>) -> String {
    match rename_all {
        None => variant.to_owned(),
        Some("kebab-case") | Some("snake_case") => {
            let separator = if rename_all == Some("kebab-case") { '-' } else { '_' };
            let mut out = String::new();
            for (i, c) in variant.chars().enumerate() {
                if c.is_uppercase() && i > 0 {
                    out.push(separator);
                }
                out.extend(c.to_lowercase());
            }
            out
        }
        Some("lowercase") => variant.to_lowercase(),
        Some(other) => panic!(
            "the seed renames variants '{other}', which this generator does not know: add it"
        ),
    }
}

fn rename_all(attrs: &[syn::Attribute]) -> Option<String> {
    for args in serde_args(attrs) {
        if let Some(rest) = args.split("rename_all = \"").nth(1) {
            return Some(rest.split('"').next().expect("a quoted value").to_owned());
        }
    }
    None
}

/// `#[repr(X)]`'s X, when it is an integer type.
fn repr(attrs: &[syn::Attribute]) -> Option<Ident> {
    attrs
        .iter()
        .filter(|attr| attr.path.is_ident("repr"))
        .find_map(|attr| attr.parse_args::<Ident>().ok())
}

/// An integer literal's value (the seed's discriminants are literals).
fn literal_value(expr: &syn::Expr) -> Option<i128> {
    match expr {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(int), .. }) => int.base10_parse().ok(),
        _ => None,
    }
}

impl Generated {
    fn item(&mut self, item: &syn::Item) {
        match item {
            syn::Item::Use(item) => self.uses.push(item.to_token_stream()),
            syn::Item::Const(item) if is_pub(&item.vis) => {
                let (name, ty) = (&item.ident, &item.ty);
                self.items.insert(name.to_string());
                self.checks.push(quote! { const _: #ty = keyhog_profile::#name; });
            }
            syn::Item::Fn(item) if is_pub(&item.vis) => {
                self.items.insert(item.sig.ident.to_string());
                self.function(&item.sig, None);
            }
            syn::Item::Struct(item) if is_pub(&item.vis) => {
                self.items.insert(item.ident.to_string());
                self.structure(item);
            }
            syn::Item::Enum(item) if is_pub(&item.vis) => {
                self.items.insert(item.ident.to_string());
                self.enumeration(item);
            }
            syn::Item::Impl(item) => self.implementation(item),
            _ => {}
        }
    }

    /// The derived traits, and Send and Sync, which every public type of
    /// the seed has (the seed's own build of this file checks that).
    fn bounds(&mut self, name: &Ident, derived: &[TokenStream]) {
        let check = format_ident!("traits_of_{}", name);
        let mut traits = derived.to_vec();
        traits.push(quote!(Send));
        traits.push(quote!(Sync));
        self.checks.push(quote! {
            #[allow(dead_code, non_snake_case, drop_bounds)]
            fn #check() {
                #( { fn has<T: ?Sized + #traits>() {} has::<#name>(); } )*
            }
        });
    }

    fn structure(&mut self, item: &syn::ItemStruct) {
        let name = &item.ident;
        let bounds: Vec<TokenStream> =
            derives(&item.attrs).iter().map(|d| derive_bound(d)).collect();
        self.bounds(name, &bounds);
        let build = format_ident!("build_{}", name);
        match &item.fields {
            syn::Fields::Named(fields) => {
                for field in &fields.named {
                    if serde_args(&field.attrs).iter().any(|args| args.contains("default")) {
                        let field = field.ident.as_ref().expect("a named field");
                        self.serde_defaults.push((name.to_string(), field.to_string()));
                    }
                }
                if fields.named.iter().all(|field| is_pub(&field.vis)) {
                    let idents: Vec<_> =
                        fields.named.iter().map(|f| f.ident.clone().expect("named")).collect();
                    let types: Vec<_> = fields.named.iter().map(|f| f.ty.clone()).collect();
                    self.checks.push(quote! {
                        #[allow(dead_code, non_snake_case, clippy::too_many_arguments)]
                        fn #build(#(#idents: #types),*) -> #name { #name { #(#idents),* } }
                    });
                } else {
                    for field in fields.named.iter().filter(|field| is_pub(&field.vis)) {
                        let (ident, ty) = (field.ident.as_ref().expect("named"), &field.ty);
                        let read = format_ident!("field_{}_{}", name, ident);
                        self.checks.push(quote! {
                            #[allow(dead_code, non_snake_case)]
                            fn #read(value: &#name) -> &#ty { &value.#ident }
                        });
                    }
                }
            }
            syn::Fields::Unit => {
                self.checks.push(quote! {
                    #[allow(dead_code, non_snake_case)]
                    fn #build() -> #name { #name }
                });
            }
            syn::Fields::Unnamed(fields) => {
                if fields.unnamed.iter().all(|field| is_pub(&field.vis)) {
                    let types: Vec<_> = fields.unnamed.iter().map(|f| f.ty.clone()).collect();
                    let args: Vec<_> = (0..types.len()).map(|i| format_ident!("a{}", i)).collect();
                    self.checks.push(quote! {
                        #[allow(dead_code, non_snake_case)]
                        fn #build(#(#args: #types),*) -> #name { #name(#(#args),*) }
                    });
                }
            }
        }
    }

    fn enumeration(&mut self, item: &syn::ItemEnum) {
        let name = &item.ident;
        let derived = derives(&item.attrs);
        let bounds: Vec<TokenStream> = derived.iter().map(|d| derive_bound(d)).collect();
        self.bounds(name, &bounds);
        let variants: Vec<&Ident> = item.variants.iter().map(|v| &v.ident).collect();
        if let Some(first) = variants.first() {
            self.first_variant.push((name.to_string(), (*first).clone()));
        }
        let indices = 0..variants.len();
        let all = format_ident!("variants_of_{}", name);
        self.checks.push(quote! {
            #[allow(dead_code, non_snake_case)]
            fn #all(value: #name) -> usize { match value { #( #name::#variants { .. } => #indices, )* } }
        });
        let fieldless = item.variants.iter().all(|v| matches!(v.fields, syn::Fields::Unit));
        if fieldless {
            let mut next = 0i128;
            for variant in &item.variants {
                let value = match &variant.discriminant {
                    Some((_, expr)) => {
                        literal_value(expr).expect("the seed's discriminants are literals")
                    }
                    None => next,
                };
                next = value + 1;
                let ident = &variant.ident;
                let literal = proc_macro2::Literal::i128_unsuffixed(value);
                self.checks
                    .push(quote! { const _: () = assert!(#name::#ident as i128 == #literal); });
            }
            if let Some(int) = repr(&item.attrs) {
                self.checks.push(quote! {
                    const _: () = assert!(std::mem::size_of::<#name>() == std::mem::size_of::<#int>());
                });
            }
        }
        let comparable = derived.iter().any(|d| d == "PartialEq");
        for variant in
            item.variants.iter().filter(|v| v.attrs.iter().any(|a| a.path.is_ident("default")))
        {
            let ident = &variant.ident;
            let what = format!("{name}::default() is not {name}::{ident}");
            self.runtime.push(quote! {
                if #name::default() != #name::#ident { errors.push(#what.to_owned()); }
            });
        }
        let serde =
            derived.iter().any(|d| d == "Serialize") && derived.iter().any(|d| d == "Deserialize");
        if serde && fieldless && comparable {
            let rename = rename_all(&item.attrs);
            for ident in &variants {
                let json =
                    format!("\"{}\"", serde_variant_name(&ident.to_string(), rename.as_deref()));
                let what = format!("{name}::{ident} is not {json} in JSON");
                self.runtime.push(quote! {
                    if serde_json::to_string(&#name::#ident).ok().as_deref() != Some(#json)
                        || serde_json::from_str::<#name>(#json).ok() != Some(#name::#ident)
                    {
                        errors.push(#what.to_owned());
                    }
                });
            }
        }
    }

    fn implementation(&mut self, item: &syn::ItemImpl) {
        let self_ty = item.self_ty.to_token_stream();
        if let Some((_, trait_path, _)) = &item.trait_ {
            let name = Ident::new(&self_ty.to_string(), Span::call_site());
            let check = format_ident!("impl_{}_{}", name, self.checks.len());
            self.checks.push(quote! {
                #[allow(dead_code, non_snake_case, drop_bounds)]
                fn #check() { fn has<T: ?Sized + #trait_path>() {} has::<#self_ty>(); }
            });
            return;
        }
        for member in &item.items {
            match member {
                syn::ImplItem::Const(constant) if is_pub(&constant.vis) => {
                    let ty = replace_self(constant.ty.to_token_stream(), &self_ty);
                    let ident = &constant.ident;
                    self.checks.push(quote! { const _: #ty = #self_ty::#ident; });
                }
                syn::ImplItem::Method(method) if is_pub(&method.vis) => {
                    self.function(&method.sig, Some(&self_ty));
                }
                _ => {}
            }
        }
    }

    /// A wrapper with the seed's signature, the function as a pointer of
    /// the seed's type when it has no generics, a const call of a const fn.
    fn function(&mut self, sig: &syn::Signature, self_ty: Option<&TokenStream>) {
        let ident = &sig.ident;
        let replace = |tokens: TokenStream| match self_ty {
            Some(with) => replace_self(tokens, with),
            None => tokens,
        };
        let mut params = Vec::new();
        let mut args = Vec::new();
        let mut types = Vec::new();
        for (i, input) in sig.inputs.iter().enumerate() {
            let arg = format_ident!("a{}", i);
            let ty = match input {
                syn::FnArg::Receiver(receiver) => {
                    let ty = self_ty.expect("a receiver is in an impl").clone();
                    match &receiver.reference {
                        Some((_, lifetime)) if receiver.mutability.is_some() => {
                            quote!(&#lifetime mut #ty)
                        }
                        Some((_, lifetime)) => quote!(&#lifetime #ty),
                        None => ty,
                    }
                }
                syn::FnArg::Typed(typed) => replace(typed.ty.to_token_stream()),
            };
            params.push(quote!(#arg: #ty));
            args.push(arg);
            types.push(ty);
        }
        let output = replace(sig.output.to_token_stream());
        let generics = replace(sig.generics.to_token_stream());
        let where_clause = replace(sig.generics.where_clause.to_token_stream());
        let path = match self_ty {
            Some(ty) => quote!(<#ty>::#ident),
            None => quote!(keyhog_profile::#ident),
        };
        let owner =
            self_ty.map_or_else(String::new, |ty| format!("{}_", ty.to_string().replace(' ', "")));
        let wrapper = format_ident!("call_{}{}", owner, ident);
        self.checks.push(quote! {
            #[allow(dead_code, non_snake_case, clippy::too_many_arguments)]
            fn #wrapper #generics (#(#params),*) #output #where_clause { #path(#(#args),*) }
        });
        let generic = !sig.generics.params.is_empty() || types.iter().any(has_impl_trait);
        if !generic && sig.asyncness.is_none() {
            self.checks.push(quote! { const _: fn(#(#types),*) #output = #path; });
        }
        // A `const fn` of an enum taking only `self`: callable in a constant.
        if sig.constness.is_some() && sig.inputs.len() == 1 {
            if let (Some(ty), Some(syn::FnArg::Receiver(receiver))) = (self_ty, sig.inputs.first())
            {
                let first = self.first_variant.iter().find(|(name, _)| *name == ty.to_string());
                if let (None, Some((_, variant)), syn::ReturnType::Type(_, ret)) =
                    (&receiver.reference, first, &sig.output)
                {
                    let ret = replace(ret.to_token_stream());
                    self.checks.push(quote! { const _: #ret = #ty::#variant.#ident(); });
                }
            }
        }
    }

    /// The docs page lists each public item on a line of its own, under
    /// the headings; every one must be in the source.  The source may have
    /// more (it makes `StateMeasurement` public, which the page leaves
    /// out): they are checked all the same, and named in
    /// `UNDOCUMENTED_ITEMS`.
    fn check_against_docs(&mut self, docs: &str) {
        const HEADINGS: [&str; 6] =
            ["Structs", "Enums", "Constants", "Functions", "Traits", "Macros"];
        let listed: BTreeSet<String> = docs
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !HEADINGS.contains(line))
            .filter(|line| line.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .map(str::to_owned)
            .collect();
        let missing: Vec<&String> = listed.difference(&self.items).collect();
        if listed.is_empty() || !missing.is_empty() {
            panic!(
                "the seed's docs list {} public items, and {:?} are not public items of its source",
                listed.len(),
                missing
            );
        }
        self.undocumented = self.items.difference(&listed).cloned().collect();
    }

    fn render(&self) -> String {
        let uses = &self.uses;
        let checks = &self.checks;
        let runtime = &self.runtime;
        let items: Vec<&String> = self.items.iter().collect();
        let undocumented = &self.undocumented;
        let defaults = self.serde_defaults.iter().map(|(ty, field)| quote!((#ty, #field)));
        let head = quote! {
            #[allow(unused_imports)]
            use keyhog_profile::*;
            /// The seed's public items, as its source has them.
            pub const SEED_ITEMS: &[&str] = &[#(#items),*];
            /// Those the seed's docs page does not list.
            pub const UNDOCUMENTED_ITEMS: &[&str] = &[#(#undocumented),*];
            /// (type, field) of the seed's `#[serde(default)]` fields.
            pub const SERDE_DEFAULT_FIELDS: &[(&str, &str)] = &[#(#defaults),*];
        };
        let tail = quote! {
            /// What the types cannot say; each failure is a line.
            pub fn runtime_checks() -> Vec<String> {
                let mut errors: Vec<String> = Vec::new();
                #(#runtime)*
                errors
            }
        };
        // One item a line, so that a compile error points at one check.
        let mut out = String::from(
            "// Generated by tests/seed-api/build.rs from the seed's source: do not edit.\n",
        );
        out.push_str(&format!("{head}\n"));
        for item in
            uses.iter().map(|u| quote!(#[allow(unused_imports)] #u)).chain(checks.iter().cloned())
        {
            out.push_str(&format!("{item}\n"));
        }
        out.push_str(&format!("{tail}\n"));
        out
    }
}
