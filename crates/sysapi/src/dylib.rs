//! Shared libraries opened when a feature first needs them, never at
//! start-up and never at build time.
//!
//! numio builds on a machine with nothing but a C toolchain (issue #37): it
//! links no system library beyond libc, so no `-dev` package, cmake or
//! libclang is needed to compile it. The libraries some features use
//! (libblkid for the write-safety probe, rdma-core's libibverbs and
//! librdmacm for NVMe/RDMA, OpenSSL's libssl for NVMe/TCP TLS) are opened
//! with `dlopen` at the moment the feature is asked for, by their ABI
//! names (`libblkid.so.1`, not the development link `libblkid.so`). A
//! library that is missing is named with the Debian and RPM packages that
//! bring it ([`LibraryError`]).
//!
//! A [`Spec`] names a library; [`Library::open`] opens it (once per
//! process, the handle is never closed: function pointers taken from it
//! stay valid for the life of the process); [`functions!`](crate::functions)
//! declares a table of C functions and resolves every one of them at once,
//! so a library too old for numio fails when it is opened, naming the
//! missing symbol, not later at a call.

use std::ffi::{c_void, CStr};
use std::fmt;
use std::ptr::NonNull;

/// A shared library a feature needs, and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// The feature that needs it, for the error ("NVMe/TCP TLS").
    pub feature: &'static str,
    /// Its ABI names, tried in order (`libssl.so.3`).
    pub sonames: &'static [&'static CStr],
    /// The Debian/Ubuntu package(s) that bring it (`libssl3`).
    pub debian: &'static str,
    /// The Fedora/RHEL/SUSE package(s) that bring it (`openssl-libs`).
    pub rpm: &'static str,
}

/// A library that could not be opened, or lacks a function numio calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryError {
    /// What was asked for.
    pub spec: Spec,
    /// The missing symbol, when the library opened but lacks it.
    pub symbol: Option<String>,
    /// `dlerror()`'s text.
    pub detail: String,
}

impl fmt::Display for LibraryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = self
            .spec
            .sonames
            .iter()
            .map(|s| s.to_string_lossy())
            .collect();
        match &self.symbol {
            None => write!(
                f,
                "{} needs {}, which cannot be loaded ({}): install it (Debian/Ubuntu: apt install {}; Fedora/RHEL: dnf install {})",
                self.spec.feature,
                names.join(" or "),
                self.detail,
                self.spec.debian,
                self.spec.rpm
            ),
            Some(sym) => write!(
                f,
                "{} needs {} with {sym}, which this one lacks ({}): install a newer one (Debian/Ubuntu: apt install {}; Fedora/RHEL: dnf install {})",
                self.spec.feature,
                names.join(" or "),
                self.detail,
                self.spec.debian,
                self.spec.rpm
            ),
        }
    }
}

impl std::error::Error for LibraryError {}

impl From<LibraryError> for std::io::Error {
    fn from(e: LibraryError) -> Self {
        std::io::Error::new(std::io::ErrorKind::NotFound, e.to_string())
    }
}

/// An open shared library (never closed).
#[derive(Debug)]
pub struct Library {
    handle: NonNull<c_void>,
    spec: Spec,
    soname: &'static CStr,
}

// SAFETY: a dlopen handle is a process-wide token; dlsym may be called on it
// from any thread.
unsafe impl Send for Library {}
// SAFETY: as above: dlsym on a handle is thread-safe (glibc locks inside).
unsafe impl Sync for Library {}

fn dlerror_text() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until
    // the next dl* call on this thread; it is copied at once.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: non-null, NUL-terminated (dlerror).
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

impl Library {
    /// Opens the first of `spec.sonames` that loads (`RTLD_NOW |
    /// RTLD_LOCAL`: its symbols stay out of the global namespace).
    pub fn open(spec: &Spec) -> Result<Library, LibraryError> {
        let mut detail = String::new();
        for soname in spec.sonames {
            // SAFETY: dlopen of a library by name; its constructors run
            // (as when linked); the handle is kept for the life of the
            // process, so symbols taken from it never dangle.
            let h = unsafe { libc::dlopen(soname.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            match NonNull::new(h) {
                Some(handle) => {
                    return Ok(Library {
                        handle,
                        spec: *spec,
                        soname,
                    })
                }
                None => {
                    if !detail.is_empty() {
                        detail.push_str("; ");
                    }
                    detail.push_str(&dlerror_text());
                }
            }
        }
        Err(LibraryError {
            spec: *spec,
            symbol: None,
            detail,
        })
    }

    /// The name it was opened by (`libssl.so.3`).
    pub fn soname(&self) -> &'static CStr {
        self.soname
    }

    /// The address of `name` (searched in the library and the libraries it
    /// depends on).
    pub fn address(&self, name: &CStr) -> Result<NonNull<c_void>, LibraryError> {
        // SAFETY: the handle is live (never closed); name is NUL-terminated.
        let p = unsafe { libc::dlsym(self.handle.as_ptr(), name.as_ptr()) };
        NonNull::new(p).ok_or_else(|| LibraryError {
            spec: self.spec,
            symbol: Some(name.to_string_lossy().into_owned()),
            detail: dlerror_text(),
        })
    }

    /// The function `name` as `F`, a function-pointer type.
    ///
    /// # Safety
    /// `F` must be an `unsafe extern "C" fn` type whose signature is the C
    /// prototype of `name` in this library's ABI.
    pub unsafe fn function<F: Copy>(&self, name: &CStr) -> Result<F, LibraryError> {
        assert_eq!(
            std::mem::size_of::<F>(),
            std::mem::size_of::<*mut c_void>(),
            "Library::function takes a function-pointer type"
        );
        let p = self.address(name)?.as_ptr();
        // SAFETY: F is a function pointer of the symbol's prototype (the
        // caller's contract) and of a pointer's size (asserted above); the
        // library is never unloaded.
        Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
    }
}

/// Declares a table of C functions of one library and its `load`, which
/// resolves every one of them (an error names the first missing one).
///
/// ```ignore
/// sysapi::functions! {
///     /// libfoo's calls.
///     pub struct Foo {
///         fn foo_new(size: usize) -> *mut c_void;
///         fn foo_free(p: *mut c_void);
///     }
/// }
/// ```
/// Each field is an `unsafe extern "C" fn` of the declared prototype; the
/// caller of `load` vouches (in its `// SAFETY:` line) that the prototypes
/// are the library's.
#[macro_export]
macro_rules! functions {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                fn $f:ident ( $($arg:ident : $ty:ty),* $(,)? ) $(-> $ret:ty)?;
            )*
        }
    ) => {
        $(#[$meta])*
        #[allow(non_snake_case)]
        $vis struct $name {
            $(
                $(#[$fmeta])*
                pub $f: unsafe extern "C" fn($($ty),*) $(-> $ret)?,
            )*
        }

        impl $name {
            /// Resolves every function of the table in `lib`.
            ///
            /// # Safety
            /// The prototypes declared in the table must be the library's.
            #[allow(dead_code)]
            pub unsafe fn load(
                lib: &$crate::dylib::Library,
            ) -> Result<Self, $crate::dylib::LibraryError> {
                Ok(Self {
                    $(
                        // SAFETY: the caller vouches for the prototype.
                        $f: unsafe {
                            lib.function(
                                ::std::ffi::CStr::from_bytes_with_nul(
                                    concat!(stringify!($f), "\0").as_bytes(),
                                )
                                .expect("a symbol name has no NUL"),
                            )
                        }?,
                    )*
                })
            }
        }

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(stringify!($name))
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIBC: Spec = Spec {
        feature: "the test",
        sonames: &[c"libc.so.6"],
        debian: "libc6",
        rpm: "glibc",
    };

    crate::functions! {
        /// Two of libc's calls, for the test.
        struct Libc {
            fn getpid() -> libc::pid_t;
            fn strlen(s: *const std::ffi::c_char) -> usize;
        }
    }

    #[test]
    fn opens_a_library_and_calls_through_the_table() {
        let lib = Library::open(&LIBC).expect("libc opens");
        assert_eq!(lib.soname(), c"libc.so.6");
        // SAFETY: getpid and strlen have these prototypes in glibc.
        let t = unsafe { Libc::load(&lib) }.expect("both resolve");
        // SAFETY: getpid takes nothing; strlen reads a NUL-terminated string.
        let (pid, n) = unsafe { ((t.getpid)(), (t.strlen)(c"numio".as_ptr())) };
        assert_eq!(pid as u32, std::process::id());
        assert_eq!(n, 5);
    }

    /// A missing library is named with the packages that bring it, each
    /// soname tried.
    #[test]
    fn a_missing_library_names_its_packages() {
        let spec = Spec {
            feature: "Frobbing",
            sonames: &[c"libnumio-absent.so.9", c"libnumio-absent.so.8"],
            debian: "libfrob9",
            rpm: "frob-libs",
        };
        let e = Library::open(&spec).unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("Frobbing needs libnumio-absent.so.9 or libnumio-absent.so.8, which cannot be loaded ("), "{text}");
        assert!(text.contains("apt install libfrob9"), "{text}");
        assert!(text.contains("dnf install frob-libs"), "{text}");
        assert!(
            text.matches("libnumio-absent.so.").count() >= 4,
            "dlerror for each: {text}"
        );
    }

    /// A symbol the library lacks is named (a library too old for numio).
    #[test]
    fn a_missing_symbol_is_named() {
        let lib = Library::open(&LIBC).unwrap();
        crate::functions! {
            #[allow(dead_code)]
            struct Absent {
                fn numio_no_such_function(x: i32) -> i32;
            }
        }
        // SAFETY: the symbol is absent, so nothing is called.
        let e = unsafe { Absent::load(&lib) }.unwrap_err();
        assert_eq!(e.symbol.as_deref(), Some("numio_no_such_function"));
        assert!(
            e.to_string()
                .contains("with numio_no_such_function, which this one lacks"),
            "{e}"
        );
    }
}
