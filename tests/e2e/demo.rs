//! `tools/demo.sh --kwok` (the demo on kwok's fake node), run as a user runs it, checked against what it promises:
//! the ActionSchedules of `examples/` create ActionSets, a backup runs with its deferPhase (the
//! status and the demo's table show it), old complete backups are rotated through the
//! Blueprint's delete action (keepLast 3), failed runs of `examples/actionschedule-verify.yaml`
//! are cleaned up (keepFailed 2), and a Blueprint with two deferPhases is refused. Then Ctrl-C
//! (SIGINT to the demo's process group, as a terminal sends it): the script exits 0, no process
//! it started is left, and its directories are gone.
//!
//! The demo runs at its own pace (schedules every 20 and 30 seconds), so this test takes about
//! two to three minutes. The demo gets its own `BPO_CLUSTER_DIR` (ports are picked free), so it
//! does not touch the control planes other test binaries start. Deadlines only bound a hang.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use blueprint_operator::model::{ActionSet, LABEL_SCHEDULE, LABEL_TRIGGER};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, ResourceExt};
use serde_json::Value;

const NS: &str = "blueprint-demo";
/// Start-up: the control plane, the webhook, the controller and `examples/` applied.
const START: Duration = Duration::from_secs(300);
/// From start-up until everything the demo promises was seen (about two minutes at its pace).
const PROMISES: Duration = Duration::from_secs(360);
/// From Ctrl-C until the script has exited.
const STOP: Duration = Duration::from_secs(90);

/// The running demo. Dropping it (a failed assertion) stops it like Ctrl-C, then by force.
struct Demo {
    child: Child,
    dir: PathBuf,
    out: PathBuf,
}

impl Demo {
    fn start() -> Demo {
        let root = support::repo_root();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let base =
            std::env::temp_dir().join(format!("bpo-demo-test-{}-{nanos}", std::process::id()));
        let out = base.with_extension("out");
        let log = File::create(&out).unwrap();
        // setpriv --pdeathsig: the demo gets SIGINT (and cleans up) even if this test process is
        // killed without running destructors.
        let mut cmd = if Path::new("/usr/bin/setpriv").exists() {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args(["--pdeathsig", "INT", "bash"]);
            c
        } else {
            Command::new("bash")
        };
        cmd.arg(root.join("tools/demo.sh"))
            .arg("--kwok")
            .current_dir(root)
            .env("BPO_CLUSTER_DIR", &base)
            .env("BPO_DEMO_BIN", env!("CARGO_BIN_EXE_blueprint-operator"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            // Its own process group, as a shell job: Ctrl-C goes to the whole group.
            .process_group(0);
        // A terminal's job starts with SIGINT at its default action. Under a background job
        // of a non-interactive shell (CI runners, `cmd &`) it is inherited as ignored, and
        // bash cannot trap a signal ignored at entry: Ctrl-C would then never reach the
        // demo's trap. Give the demo what a terminal gives it.
        // SAFETY: signal(2) is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        eprintln!(
            "starting tools/demo.sh with BPO_CLUSTER_DIR={} (output: {})",
            base.display(),
            out.display()
        );
        Demo {
            child: cmd.spawn().expect("start tools/demo.sh"),
            dir: base,
            out,
        }
    }

    fn output(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap_or_default()
    }

    fn work_dir(&self) -> PathBuf {
        let mut s = self.dir.clone().into_os_string();
        s.push(".run");
        PathBuf::from(s)
    }

    /// What a terminal does on Ctrl-C: SIGINT to every process of the foreground group.
    fn ctrl_c(&self) {
        signal_group(self.child.id(), "INT");
    }

    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().expect("wait for tools/demo.sh")
    }
}

fn signal_group(pgid: u32, sig: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{sig}"), "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
}

impl Drop for Demo {
    fn drop(&mut self) {
        if self.exited().is_none() {
            self.ctrl_c();
            let deadline = std::time::Instant::now() + STOP;
            while self.exited().is_none() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(200));
            }
            if self.exited().is_none() {
                signal_group(self.child.id(), "KILL");
                let _ = self.child.wait();
            }
        }
        let _ = Command::new("bash")
            .arg(support::repo_root().join("tools/control-plane/cluster.sh"))
            .arg("down")
            .env("BPO_CLUSTER_DIR", &self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(self.work_dir());
        if std::thread::panicking() {
            eprintln!("--- tools/demo.sh output ---\n{}", self.output());
        }
        let _ = std::fs::remove_file(&self.out);
    }
}

/// A live process (not a zombie) other than this one whose command line or environment
/// mentions `needle`: everything the demo starts inherits `BPO_CLUSTER_DIR`.
fn processes_mentioning(needle: &str) -> Vec<(u32, String)> {
    let me = std::process::id();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let dir = entry.path();
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        if stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
        {
            continue;
        }
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
        let hit = |b: &[u8]| b.windows(needle.len()).any(|w| w == needle.as_bytes());
        if hit(&cmdline) || hit(&environ) {
            let cmd = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            found.push((pid, cmd.trim().to_string()));
        }
    }
    found
}

/// The component a command line belongs to: the program's file name, and for our binary its
/// subcommand too ("blueprint-operator webhook").
fn component(cmdline: &str) -> String {
    let mut words = cmdline.split_whitespace();
    let prog = words
        .next()
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
        .unwrap_or_default();
    if prog == "blueprint-operator" {
        format!("{prog} {}", words.next().unwrap_or_default())
    } else {
        prog
    }
}

async fn demo_client(dir: &Path) -> Client {
    let kubeconfig = Kubeconfig::read_from(dir.join("kubeconfig")).expect("demo kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("demo kube config");
    Client::try_from(config).unwrap()
}

/// One ActionSet as the test follows it.
#[derive(Debug, Clone)]
struct Run {
    schedule: String,
    trigger: String,
    state: String,
    defer_state: String,
    value: Value,
}

fn run_of(a: &ActionSet) -> Run {
    let value = serde_json::to_value(a).unwrap();
    let text = |p: &str| {
        value
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    Run {
        schedule: a.labels().get(LABEL_SCHEDULE).cloned().unwrap_or_default(),
        trigger: a.labels().get(LABEL_TRIGGER).cloned().unwrap_or_default(),
        state: text("/status/state"),
        defer_state: text("/status/actions/0/deferPhase/state"),
        value,
    }
}

/// What has been seen so far, by ActionSet name.
#[derive(Default, Debug)]
struct Seen {
    /// Scheduled runs, with the ActionSchedule that created them.
    created: BTreeMap<String, String>,
    /// Backups seen complete with their deferPhase complete.
    backups_complete: BTreeSet<String>,
    /// Verify runs seen failed with their deferPhase complete (it runs after the failure).
    verify_failed: BTreeSet<String>,
    /// Names present in the last listing.
    present: BTreeSet<String>,
}

impl Seen {
    fn observe(&mut self, list: &[ActionSet]) {
        self.present.clear();
        for a in list {
            let name = a.name_any();
            self.present.insert(name.clone());
            let r = run_of(a);
            if r.trigger != "scheduled" {
                continue;
            }
            // A run of its ActionSchedule (annotation; no ownerReference, so
            // deleting the schedule keeps it).
            assert_eq!(
                a.annotations()
                    .get(blueprint_operator::model::ANNOTATION_SCHEDULE)
                    .map(String::as_str),
                Some(r.schedule.as_str()),
                "{name}: a run of its ActionSchedule"
            );
            assert!(a.owner_references().is_empty(), "{name}: no ownerReference");
            self.created.insert(name.clone(), r.schedule.clone());
            match (
                r.schedule.as_str(),
                r.state.as_str(),
                r.defer_state.as_str(),
            ) {
                ("demo-backup", "complete", "complete") => {
                    // The deferPhase scaled the app back up and its output reached the artifact.
                    let art = &r.value["status"]["actions"][0]["artifacts"]["snapshot"]["keyValue"];
                    assert_eq!(art["replicas"], "2", "{name}: {art}");
                    assert_eq!(art["replicasDuringCopy"], "0", "{name}: {art}");
                    assert_eq!(art["id"], "snap-demo", "{name}: {art}");
                    self.backups_complete.insert(name);
                }
                ("demo-verify", "failed", "complete") => {
                    // The check failed (its phase, and the error in the status), then the
                    // deferPhase ran.
                    let st = &r.value["status"];
                    assert_eq!(
                        st["actions"][0]["phases"][0]["name"], "checkRestore",
                        "{st}"
                    );
                    assert_eq!(st["actions"][0]["phases"][0]["state"], "failed", "{st}");
                    assert_ne!(st["error"]["message"], "", "{st}");
                    self.verify_failed.insert(name);
                }
                _ => {}
            }
        }
    }

    /// Seen runs of one kind that are gone now, and how many seen ones are still there.
    fn gone_and_kept<'a>(&self, seen: &'a BTreeSet<String>) -> (Vec<&'a String>, usize) {
        let gone: Vec<&String> = seen.iter().filter(|n| !self.present.contains(*n)).collect();
        let kept = seen.len() - gone.len();
        (gone, kept)
    }

    fn rotated(&self) -> bool {
        // The oldest complete backups went (after their delete action: see the Events), the
        // newest 3 stay.
        let (gone, kept) = self.gone_and_kept(&self.backups_complete);
        !gone.is_empty() && kept >= 3
    }

    fn failed_cleaned(&self) -> bool {
        let (gone, kept) = self.gone_and_kept(&self.verify_failed);
        !gone.is_empty() && kept >= 2
    }

    fn done(&self) -> bool {
        self.created.values().any(|s| s == "demo-backup")
            && self.created.values().any(|s| s == "demo-verify")
            && self.rotated()
            && self.failed_cleaned()
    }
}

/// Names rotated away must be the oldest: scheduled run names end with the scheduled time.
fn assert_oldest_went(seen: &BTreeSet<String>, present: &BTreeSet<String>, what: &str) {
    let gone: Vec<&String> = seen.iter().filter(|n| !present.contains(*n)).collect();
    let kept: Vec<&String> = seen.iter().filter(|n| present.contains(*n)).collect();
    let (Some(newest_gone), Some(oldest_kept)) = (gone.last(), kept.first()) else {
        panic!("{what}: nothing rotated (gone {gone:?}, kept {kept:?})");
    };
    assert!(
        newest_gone < oldest_kept,
        "{what}: rotation removed {gone:?} but kept older ones {kept:?}"
    );
}

#[tokio::test]
async fn demo_shows_what_it_promises_and_ctrl_c_stops_everything() {
    let mut demo = Demo::start();
    let needle = demo.dir.to_str().unwrap().to_string();

    // 1. Start-up: the demo says it is watching once everything is applied.
    support::poll(START, || {
        let out = demo.output();
        async move { out.contains("[demo]\u{1b}[0m watching").then_some(()) }
    })
    .await
    .unwrap_or_else(|e| panic!("demo did not start: {e}\n{}", demo.output()));
    assert!(demo.exited().is_none(), "demo exited early");

    // The Blueprint with two deferPhases was refused by the webhook, with the reason.
    let out = demo.output();
    let refused = out
        .lines()
        .skip_while(|l| !l.contains("two deferPhases is refused"))
        .nth(1)
        .unwrap_or_default();
    assert!(
        refused.contains("The Blueprint \"bad\" is invalid: actions.backup.deferPhase:"),
        "refusal not shown: {refused:?}\n{out}"
    );
    let client = demo_client(&demo.dir).await;
    let blueprints: Api<kube::core::DynamicObject> = Api::namespaced_with(
        client.clone(),
        NS,
        &kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("cr.kanister.io", "v1alpha1", "Blueprint"),
            "blueprints",
        ),
    );
    assert!(blueprints.get_opt("bad").await.unwrap().is_none());
    // The unnormalized one was normalized on the way in (names, the list became the object),
    // and the demo printed it.
    let normalized = blueprints.get("normalized").await.unwrap();
    let backup = &normalized.data["actions"]["backup"];
    assert_eq!(backup["phases"][0]["name"], "phase0");
    assert_eq!(backup["phases"][1]["name"], "phase1");
    assert_eq!(backup["deferPhase"]["name"], "deferPhase", "{backup}");
    assert!(out.contains("  deferPhase deferPhase: KubeTask"), "{out}");

    // 2. The schedules at work, followed until every promise was seen.
    let api: Api<ActionSet> = Api::namespaced(client.clone(), NS);
    let mut seen = Seen::default();
    let deadline = tokio::time::Instant::now() + PROMISES;
    loop {
        assert!(demo.exited().is_none(), "demo exited:\n{}", demo.output());
        if let Ok(list) = api.list(&ListParams::default()).await {
            seen.observe(&list.items);
            if seen.done() {
                break;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not everything the demo promises happened within {PROMISES:?}: {seen:#?}\n{}",
            demo.output()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_oldest_went(&seen.backups_complete, &seen.present, "keepLast");
    assert_oldest_went(&seen.verify_failed, &seen.present, "keepFailed");
    // The ActionSchedules said so in their Events.
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    let notes: Vec<String> = events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("Rotated"))
        .filter_map(|e| e.note)
        .collect();
    for name in seen
        .backups_complete
        .iter()
        .filter(|n| !seen.present.contains(*n))
    {
        assert!(
            notes
                .iter()
                .any(|n| n.contains(name.as_str()) && n.contains("after delete action")),
            "no Rotated event for {name}: {notes:#?}"
        );
    }

    // The demo's table showed a backup run with its deferPhase state (its DEFERPHASE column).
    let out = demo.output();
    let header = out
        .lines()
        .find(|l| l.contains("DEFERPHASE"))
        .expect("ActionSet table");
    let col = header
        .split_whitespace()
        .position(|c| c == "DEFERPHASE")
        .unwrap();
    assert!(
        out.lines().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.first()
                .is_some_and(|n| seen.backups_complete.contains(*n))
                && w.get(2) == Some(&"complete")
                && w.get(col) == Some(&"complete")
        }),
        "no table row shows a complete backup with its deferPhase complete:\n{out}"
    );

    // 3. Ctrl-C. Before: the processes the demo started, found the way the check below looks.
    let running: BTreeSet<String> = processes_mentioning(&needle)
        .iter()
        .map(|(_, c)| component(c))
        .collect();
    for c in [
        "blueprint-operator webhook",
        "blueprint-operator controller",
        "kube-apiserver",
        "etcd",
        "kwok",
    ] {
        assert!(running.contains(c), "{c} not found running: {running:?}");
    }
    demo.ctrl_c();
    let deadline = tokio::time::Instant::now() + STOP;
    let status = loop {
        if let Some(s) = demo.exited() {
            break s;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "demo still running {STOP:?} after Ctrl-C:\n{}",
            demo.output()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        status.success(),
        "demo exited with {status} after Ctrl-C:\n{}",
        demo.output()
    );
    let left = processes_mentioning(&needle);
    assert!(
        left.is_empty(),
        "processes left after the demo exited: {left:#?}"
    );
    assert!(!demo.dir.exists(), "{} left", demo.dir.display());
    assert!(
        !demo.work_dir().exists(),
        "{} left",
        demo.work_dir().display()
    );
    assert!(demo.output().contains("[demo]\u{1b}[0m stopped"));
}
