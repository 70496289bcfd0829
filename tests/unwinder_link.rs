//! The shared library's link (link/cc-order, the linker this repository's
//! x86_64 Linux builds name in .cargo/config.toml) takes the unwinder from
//! libgcc_eh.a instead of loading libgcc_s.so.1 at run time. A panic must
//! still unwind to the boundary's `catch_unwind`, or a host would abort on
//! the first one. Linking the library itself takes minutes, so this test
//! links a small cdylib named `libtoolnexus.so` through the same script and
//! loads it from C: it must not need libgcc_s.so.1, and its panic must come
//! back as the value the catch gives.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use std::path::{Path, PathBuf};
use std::process::Command;

const LIB: &str = r#"
#[no_mangle]
pub extern "C" fn probe(x: i32) -> i32 {
    std::panic::set_hook(Box::new(|_| {}));
    std::panic::catch_unwind(|| if x > 0 { panic!("probe") } else { x * 2 }).unwrap_or(-1)
}
"#;

const MAIN: &str = r#"
#include <stdio.h>
int probe(int);
int main(void) { printf("%d %d\n", probe(1), probe(-4)); return 0; }
"#;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// libgcc_eh.a as the C compiler finds it, when it has one.
fn static_unwinder() -> Option<PathBuf> {
    let out = Command::new("cc")
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (path.is_absolute() && path.is_file()).then_some(path)
}

#[test]
fn a_panic_in_the_shared_library_unwinds_to_its_catch_without_libgcc_s() {
    let dir = tempfile::tempdir().expect("temp dir");
    let dir: &Path = dir.path();
    std::fs::write(dir.join("lib.rs"), LIB).expect("lib.rs");
    std::fs::write(dir.join("main.c"), MAIN).expect("main.c");
    let so = dir.join("libtoolnexus.so");
    run(
        Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .args(["--crate-type", "cdylib", "--edition", "2021", "-O", "-C"])
            .arg(format!("linker={}", root().join("link/cc-order").display()))
            .arg("-o")
            .arg(&so)
            .arg(dir.join("lib.rs")),
    );

    let dynamic = run(Command::new("readelf").arg("-d").arg(&so));
    match static_unwinder() {
        Some(eh) => assert!(
            !dynamic.contains("libgcc_s"),
            "{} is there, yet the library needs libgcc_s:\n{dynamic}",
            eh.display()
        ),
        None => eprintln!("no libgcc_eh.a here: the library links libgcc_s as before"),
    }

    let exe = dir.join("main");
    run(Command::new("cc")
        .arg(dir.join("main.c"))
        .arg(format!("-L{}", dir.display()))
        .arg(format!("-Wl,-rpath,{}", dir.display()))
        .arg("-ltoolnexus")
        .arg("-o")
        .arg(&exe));
    // (cargo's LD_LIBRARY_PATH would find the real library first.)
    let out = run(Command::new(&exe).env_remove("LD_LIBRARY_PATH"));
    assert_eq!(
        out, "-1 -8\n",
        "the panic did not come back as the catch's value"
    );
}
