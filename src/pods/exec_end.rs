//! Seeing an exec'd command's own end. Kubernetes reports success for an exec whose stream was
//! cut between the kubelet and the container runtime (an error channel that closes with nothing
//! on it reads as exit code 0), so a restart of containerd or the kubelet can pass for a command
//! that finished, with the output it printed after the cut lost. A command run by a shell is
//! therefore run by that same shell one level down, which reports the command's exit status
//! last on stderr: a success without that report is a stream that was cut.

/// The shells whose `-c` runs `"$@"`: the command's own interpreter reports its end, so no
/// program the container may lack is needed.
const SHELLS: &[&str] = &["sh", "bash", "dash", "ash", "ksh", "zsh"];

/// Inside the script's single quotes: no quote in it.
const MARK: &str = "blueprint-operator: exec ended with status";

/// `command` run by its own shell, which then reports the end (`None`: not a shell command,
/// run as it is).
pub fn wrap(command: &[String]) -> Option<Vec<String>> {
    let shell = command.first()?;
    let name = shell.rsplit('/').next().unwrap_or(shell);
    if !SHELLS.contains(&name) {
        return None;
    }
    let script = format!(r#""$@"; s=$?; printf '\n%s %d\n' '{MARK}' "$s" >&2; exit "$s""#);
    let mut wrapped = vec![shell.clone(), "-c".into(), script, shell.clone()];
    wrapped.extend(command.iter().cloned());
    Some(wrapped)
}

/// Removes the end report from `stderr`; whether it was there.
pub fn take_report(stderr: &mut String) -> bool {
    let Some(body) = stderr.strip_suffix('\n') else {
        return false;
    };
    let Some((before, last)) = body.rsplit_once('\n') else {
        return false;
    };
    let reported = last
        .strip_prefix(MARK)
        .and_then(|s| s.strip_prefix(' '))
        .is_some_and(|code| code.parse::<i32>().is_ok());
    if reported {
        stderr.truncate(before.len());
    }
    reported
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_shell_commands_are_wrapped_by_their_own_shell() {
        assert_eq!(wrap(&strings(&["pg_dump", "-U", "x"])), None);
        assert_eq!(wrap(&[]), None);
        let w = wrap(&strings(&["/bin/bash", "-o", "errexit", "-c", "echo hi"])).unwrap();
        assert_eq!(w[..2], strings(&["/bin/bash", "-c"]));
        assert_eq!(
            w[3..],
            strings(&["/bin/bash", "/bin/bash", "-o", "errexit", "-c", "echo hi"])
        );
        assert!(w[2].starts_with(r#""$@"; s=$?;"#), "{}", w[2]);
    }

    /// The wrapper as a real shell runs it: the command's output, status and stdin untouched,
    /// the report last on stderr, removed by `take_report`.
    #[test]
    fn a_shell_reports_the_end_and_keeps_the_status() {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let command = strings(&["sh", "-c", "read x; echo out $x; echo err >&2; exit 3"]);
        let w = wrap(&command).unwrap();
        let mut child = Command::new(&w[0])
            .args(&w[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(b"in\n").unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "out in\n");
        let mut stderr = String::from_utf8(out.stderr).unwrap();
        assert!(take_report(&mut stderr), "{stderr:?}");
        assert_eq!(stderr, "err\n");
    }

    #[test]
    fn a_missing_or_foreign_last_line_is_no_report() {
        for text in [
            "",
            "err\n",
            "x\nblueprint-operator: exec ended with status\n",
        ] {
            let mut s = text.to_string();
            assert!(!take_report(&mut s), "{text:?}");
            assert_eq!(s, text);
        }
        let mut s = format!("no newline at the end\n{MARK} 0\n");
        assert!(take_report(&mut s));
        assert_eq!(s, "no newline at the end");
    }
}
