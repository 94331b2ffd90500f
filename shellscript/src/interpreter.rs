// SPDX-License-Identifier: Apache-2.0
//! Which program runs the script: the one its shebang names, or bash, or /bin/sh
//! where bash is absent. Programs are found through the host (`Host::which`), so a
//! scratch host root in tests answers from its stand-ins.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use skyhook_core::{Error, Host, Result};

use crate::input::script::Shebang;

/// The program that runs a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpreter {
    /// The program executed (found on the host).
    pub program: PathBuf,
    /// The shebang's argument, passed before the script path.
    pub arg: Option<OsString>,
    /// How messages and the report name it: `/bin/sh -e`, `/usr/bin/bash`.
    pub name: String,
}

/// The interpreter a script needs is not on the host: what to tell the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// How the interpreter was named (`/usr/bin/env python3`, `bash or sh`).
    pub name: String,
    /// What is missing and what to do.
    pub message: String,
}

/// Finds the interpreter for the script in configMap key `key`.
pub fn resolve(host: &Host, key: &str, shebang: Option<&Shebang>) -> Result<Result<Interpreter, Missing>> {
    match shebang {
        Some(s) => from_shebang(host, key, s),
        None => Ok(default(host, key)),
    }
}

fn from_shebang(host: &Host, key: &str, shebang: &Shebang) -> Result<Result<Interpreter, Missing>> {
    let interpreter = shebang.interpreter.to_str().ok_or_else(|| {
        Error::input(format!(
            "the shebang of configMap key {key:?} names an interpreter path that is not valid UTF-8: {:?}",
            shebang.interpreter
        ))
    })?;
    let arg = shebang.arg.map(|a| a.to_string_lossy().into_owned());
    let name = match &arg {
        Some(a) => format!("{interpreter} {a}"),
        None => interpreter.to_string(),
    };
    let Some(program) = host.which(interpreter) else {
        return Ok(Err(Missing {
            message: format!(
                "the interpreter {interpreter}, named by the shebang `#!{name}` of configMap key {key:?}, \
                 does not exist on the host or is not executable; install it or change the shebang"
            ),
            name,
        }));
    };
    // `#!/usr/bin/env NAME` runs env, as the kernel would; NAME is looked up first
    // so that a missing program is reported plainly rather than by env.
    if Path::new(interpreter).file_name().is_some_and(|f| f == "env")
        && let Some(target) = arg.as_deref()
        && !target.starts_with('-')
        && !target.contains(['=', ' ', '\t'])
        && host.which(target).is_none()
    {
        return Ok(Err(Missing {
            message: format!(
                "{target}, which the shebang `#!{name}` of configMap key {key:?} runs, is not installed on \
                 the host (looked in PATH and the system directories); install it or change the shebang"
            ),
            name,
        }));
    }
    Ok(Ok(Interpreter {
        program,
        arg: shebang.arg.map(Into::into),
        name,
    }))
}

fn default(host: &Host, key: &str) -> Result<Interpreter, Missing> {
    if let Some(bash) = host.which("bash") {
        return Ok(Interpreter {
            name: bash.display().to_string(),
            program: bash,
            arg: None,
        });
    }
    if let Some(sh) = host.which("sh") {
        log::warn!(
            "configMap key {key:?} has no shebang and bash is not installed on this host: running it \
             under {} instead. A script using bash features will fail; add a shebang naming the \
             interpreter it needs",
            sh.display()
        );
        return Ok(Interpreter {
            name: sh.display().to_string(),
            program: sh,
            arg: None,
        });
    }
    Err(Missing {
        name: "bash".into(),
        message: format!(
            "configMap key {key:?} has no shebang, so it runs under bash (or sh), but neither is \
             installed on the host (looked in PATH and the system directories)"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use skyhook_core::host::command::{Output, RecordingRunner};
    use std::ffi::OsStr;
    use std::io;

    /// A host whose `which` knows exactly `programs` (name → path).
    fn host_with(programs: &'static [(&'static str, &'static str)]) -> Host {
        Host::new(
            "/",
            RecordingRunner::new(move |cmd| {
                let wanted = cmd.args.first().cloned().unwrap_or_default();
                match programs.iter().find(|(n, _)| *n == wanted) {
                    Some((_, p)) => Ok(Output::exited(0, *p)),
                    None => Err(io::Error::from(io::ErrorKind::NotFound)),
                }
            }),
        )
    }

    fn shebang<'a>(interpreter: &'a str, arg: Option<&'a str>) -> Shebang<'a> {
        Shebang {
            interpreter: OsStr::new(interpreter),
            arg: arg.map(OsStr::new),
        }
    }

    #[test]
    fn without_shebang_prefers_bash_then_sh() {
        let h = host_with(&[("bash", "/usr/bin/bash"), ("sh", "/bin/sh")]);
        let i = resolve(&h, "apply.sh", None).unwrap().unwrap();
        assert_eq!(
            (i.program, i.name.as_str()),
            (PathBuf::from("/usr/bin/bash"), "/usr/bin/bash")
        );
        let h = host_with(&[("sh", "/bin/sh")]);
        assert_eq!(resolve(&h, "apply.sh", None).unwrap().unwrap().name, "/bin/sh");
        let m = resolve(&host_with(&[]), "apply.sh", None).unwrap().unwrap_err();
        assert!(m.message.contains("neither is installed"), "{}", m.message);
    }

    #[test]
    fn shebang_interpreter_and_argument_are_kept() {
        let h = host_with(&[("/bin/sh", "/bin/sh")]);
        let i = resolve(&h, "apply.sh", Some(&shebang("/bin/sh", Some("-e"))))
            .unwrap()
            .unwrap();
        assert_eq!(i.arg.as_deref(), Some(OsStr::new("-e")));
        assert_eq!(i.name, "/bin/sh -e");
    }

    #[test]
    fn missing_interpreters_are_named() {
        let h = host_with(&[("/usr/bin/env", "/usr/bin/env")]);
        let m = resolve(&h, "apply.sh", Some(&shebang("/opt/x/bin/ruby", None)))
            .unwrap()
            .unwrap_err();
        assert!(
            m.message.contains("/opt/x/bin/ruby") && m.message.contains("\"apply.sh\""),
            "{}",
            m.message
        );
        let m = resolve(&h, "apply.sh", Some(&shebang("/usr/bin/env", Some("python3"))))
            .unwrap()
            .unwrap_err();
        assert!(
            m.message
                .starts_with("python3, which the shebang `#!/usr/bin/env python3`"),
            "{}",
            m.message
        );
        // env options are env's business
        let i = resolve(&h, "apply.sh", Some(&shebang("/usr/bin/env", Some("-S python3 -u"))))
            .unwrap()
            .unwrap();
        assert_eq!(i.program, PathBuf::from("/usr/bin/env"));
    }
}
