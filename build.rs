//! Generates include/toolnexus.h from src/ffi with cbindgen. The header is
//! checked in; CI regenerates it and fails on any difference.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src/ffi");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let version = env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    let part = |name: &str| env::var(name).expect("cargo sets the version parts");
    // The shared library's soname carries the major version (the cargo-c
    // convention): scripts/install.sh installs libtoolnexus.so.X.Y.Z with the
    // libtoolnexus.so.X and libtoolnexus.so links.
    if env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        println!(
            "cargo:rustc-cdylib-link-arg=-Wl,-soname,libtoolnexus.so.{}",
            part("CARGO_PKG_VERSION_MAJOR")
        );
        pack_relative_relocs();
        symbol_order(&dir);
    }
    let mut config =
        cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml is readable");
    config.after_includes = Some(format!(
        "\n#define TOOLNEXUS_VERSION \"{version}\"\n#define TOOLNEXUS_VERSION_MAJOR {}\n#define TOOLNEXUS_VERSION_MINOR {}\n#define TOOLNEXUS_VERSION_PATCH {}\n",
        part("CARGO_PKG_VERSION_MAJOR"),
        part("CARGO_PKG_VERSION_MINOR"),
        part("CARGO_PKG_VERSION_PATCH"),
    ));
    match cbindgen::Builder::new()
        .with_src(dir.join("src/ffi/mod.rs"))
        .with_config(config)
        .generate()
    {
        Ok(bindings) => {
            bindings.write_to_file(dir.join("include/toolnexus.h"));
        }
        Err(e) => panic!("cbindgen could not generate include/toolnexus.h: {e}"),
    }
}

/// Links the shared library with packed relative relocations (DT_RELR,
/// issue 15) when the linker and C library support them: the ~37,000
/// relative relocations then take a few kilobytes instead of ~900 KB that
/// the loader reads and walks on every start. Probed by linking a tiny
/// shared object with the flag, warnings fatal; without support the library
/// links as before.
fn pack_relative_relocs() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let Ok(out) = env::var("OUT_DIR") else { return };
    let probe = PathBuf::from(out).join("relr-probe.so");
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let child = Command::new(cc)
        .args(["-x", "c", "-", "-shared", "-fPIC", "-o"])
        .arg(&probe)
        .args(["-Wl,-z,pack-relative-relocs", "-Wl,--fatal-warnings"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"static int x; int *p = &x;\n");
    }
    if child.wait().is_ok_and(|s| s.success()) {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,pack-relative-relocs");
    }
}

/// Release builds link the functions a client run executes next to each
/// other (link/symbol-order.txt, written by bench/gen_symbol_order.sh; issue
/// 11's peak RSS): the kernel maps 64 KB around every fault in the library's
/// code, so a run's ~1 MB of functions spread over the 10 MB .text made most
/// of that text resident. Only lld knows --symbol-ordering-file, so a tiny
/// cdylib is linked with it first, through the same rustc, target and
/// RUSTFLAGS; with another linker the library links as before. The file's
/// names come from an earlier build: link/cc-order (the linker
/// .cargo/config.toml names) matches them to this build's, whose thin-LTO
/// and legacy-mangling hashes differ, before lld places them; names no
/// build has are skipped (the order only moves code, never adds or drops
/// any).
fn symbol_order(dir: &std::path::Path) {
    use std::process::{Command, Stdio};
    println!("cargo:rerun-if-changed=link/symbol-order.txt");
    println!("cargo:rerun-if-env-changed=TN_NO_SYMBOL_ORDER");
    let order = dir.join("link/symbol-order.txt");
    if env::var("PROFILE").map_or(true, |p| p != "release")
        || env::var_os("TN_NO_SYMBOL_ORDER").is_some()
        || !order.is_file()
    {
        return;
    }
    let (Ok(out), Ok(target)) = (env::var("OUT_DIR"), env::var("TARGET")) else {
        return;
    };
    let out = PathBuf::from(out);
    let src = out.join("order_probe.rs");
    if std::fs::write(
        &src,
        "#[no_mangle]\npub extern \"C\" fn tn_order_probe() {}\n",
    )
    .is_err()
    {
        return;
    }
    let args = [
        format!("-Wl,--symbol-ordering-file={}", order.display()),
        "-Wl,--no-warn-symbol-ordering".to_string(),
    ];
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let mut probe = Command::new(rustc);
    probe
        .args([
            "--crate-type",
            "cdylib",
            "--crate-name",
            "tn_order_probe",
            "--edition",
            "2021",
        ])
        .args(["--target", &target, "--out-dir"])
        .arg(&out)
        .args(flags.split('\x1f').filter(|f| !f.is_empty()));
    for a in &args {
        probe.arg(format!("-Clink-arg={a}"));
    }
    let ok = probe
        .arg(&src)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        for a in &args {
            println!("cargo:rustc-cdylib-link-arg={a}");
        }
    }
}
