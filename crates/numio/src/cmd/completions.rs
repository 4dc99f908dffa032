//! `numio completions SHELL`: the shell completion script, generated from
//! the same clap definitions that parse the flags (clap_complete), so it
//! never falls behind them.

use std::io::Write;

use clap_complete::Shell;

/// Flags of `numio completions`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Install (or let the Debian package do it):
  numio completions bash > /usr/share/bash-completion/completions/numio
  numio completions zsh  > /usr/share/zsh/vendor-completions/_numio
  numio completions fish > /usr/share/fish/vendor_completions.d/numio.fish
For one user: bash: ~/.local/share/bash-completion/completions/numio;
fish: ~/.config/fish/completions/numio.fish; zsh: a directory on $fpath.")]
pub struct Args {
    /// Shell to write the completion script for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Writes the script for `args.shell` and the command line `cli` to stdout.
pub fn run(args: Args, mut cli: clap::Command) -> anyhow::Result<i32> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "numio", &mut out);
    std::io::stdout().lock().write_all(&out)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli() -> clap::Command {
        clap::Command::new("numio")
            .subcommand(clap::Command::new("serve").arg(clap::arg!(--config <FILE>)))
    }

    #[test]
    fn each_shell_names_the_subcommands_and_flags() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut cli(), "numio", &mut out);
            let text = String::from_utf8(out).unwrap();
            assert!(text.contains("serve"), "{shell}: {text}");
            assert!(text.contains("config"), "{shell}: {text}");
        }
    }
}
