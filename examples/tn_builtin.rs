//! Runs one builtin from the command line, for side-by-side timing with
//! command-line tools (bench/builtins_compare.sh):
//!
//!     cargo run --release --example tn_builtin -- grep '{"pattern":"x","path":"."}'
//!
//! Prints the ToolResult JSON; exits 1 when isError.

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    let (Some(name), Some(args)) = (argv.next(), argv.next()) else {
        eprintln!("usage: tn_builtin NAME ARGS_JSON");
        return ExitCode::from(2);
    };
    let args: serde_json::Value = match serde_json::from_str(&args) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("ARGS_JSON is not JSON: {e}");
            return ExitCode::from(2);
        }
    };
    let result = toolnexus::builtin::run(&name, &args, &Default::default());
    println!("{}", result.to_json());
    if result.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
