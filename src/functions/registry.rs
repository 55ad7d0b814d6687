//! The Kanister functions, with the arguments each requires and accepts and the JSON type each
//! takes: the 28 of Kanister HEAD `pkg/function`, plus the three `*UsingKopiaServer` functions
//! that released Kanister (0.9x to 0.116) registers and documents, so Blueprints written for it
//! are admitted (this executor does not run them: Kanister's Kopia repository server is gone
//! from HEAD and not provided here; `validate` warns). [`NEVER_RELEASED`] lists the three
//! other `*UsingKopiaServer` functions that were only ever proposed.

/// The JSON type a function argument takes after Kanister's weak decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgType {
    /// A string; numbers and booleans are accepted (weak decoding: `true` is "1").
    Str,
    /// A list of strings, e.g. `command`; a single value is a one-element list and an empty map
    /// an empty list (weak decoding).
    StrList,
    /// An integer, or a string of decimal digits or that renders to one
    /// (`'{{ len .StatefulSet.Pods }}'`).
    Int,
    /// A boolean, Go's `ParseBool` strings (`true`, `1`, `T`, `FALSE`, ...), a number, or a
    /// template.
    Bool,
    /// A map of anything (`podOverride`, Go `map[string]interface{}`); a list of maps is their
    /// merge and an empty list an empty map (weak decoding).
    Map,
    /// A map of strings (`podLabels`, `volumes`, Go `map[string]string`), decoded as [`Map`]
    /// with each value decoded as [`Str`].
    StrMap,
    /// A map decoded into a Go struct (`conditions`, `objectReference`): no list is accepted.
    Struct,
    /// Anything: the function decodes it itself.
    Any,
}

impl ArgType {
    pub fn describe(self) -> &'static str {
        match self {
            ArgType::Str => "a string",
            ArgType::StrList => "a list of strings (or one string)",
            ArgType::Int => {
                "an integer (or a string of decimal digits, or a template that renders to one)"
            }
            ArgType::Bool => {
                "a boolean (true/false, or a string Go's strconv.ParseBool reads: 1, t, T, TRUE, 0, f, F, FALSE)"
            }
            ArgType::Map => "a map (or a list of maps, merged)",
            ArgType::StrMap => "a map of strings (or a list of such maps, merged)",
            ArgType::Struct => "a map",
            ArgType::Any => "any value",
        }
    }
}

#[derive(Debug)]
pub struct Function {
    pub name: &'static str,
    /// Required arguments, in Kanister's declared order.
    pub required: &'static [(&'static str, ArgType)],
    pub optional: &'static [(&'static str, ArgType)],
}

impl Function {
    /// The type of a supported argument, `None` when the function does not take it.
    pub fn arg(&self, name: &str) -> Option<ArgType> {
        self.required
            .iter()
            .chain(self.optional)
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
    }

    pub fn arg_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.required.iter().chain(self.optional).map(|(n, _)| *n)
    }

    /// Wait and WaitV2 render their own arguments, against the fetched object.
    pub fn renders_own_args(&self) -> bool {
        matches!(self.name, "Wait" | "WaitV2")
    }
}

use ArgType::*;

const POD: [(&str, ArgType); 3] = [
    ("podOverride", Map),
    ("podAnnotations", StrMap),
    ("podLabels", StrMap),
];

macro_rules! func {
    ($name:literal, [$($r:literal: $rt:ident),*], [$($o:literal: $ot:ident),*]) => {
        Function { name: $name, required: &[$(($r, $rt)),*], optional: &[$(($o, $ot)),*] }
    };
    ($name:literal, [$($r:literal: $rt:ident),*], [$($o:literal: $ot:ident),*], pod) => {
        Function { name: $name, required: &[$(($r, $rt)),*],
                   optional: &[$(($o, $ot),)* POD[0], POD[1], POD[2]] }
    };
}

pub static FUNCTIONS: &[Function] = &[
    func!("BackupData", ["namespace": Str, "pod": Str, "container": Str, "includePath": Str, "backupArtifactPrefix": Str],
          ["encryptionKey": Str, "insecureTLS": Bool]),
    func!("BackupDataAll", ["namespace": Str, "container": Str, "includePath": Str, "backupArtifactPrefix": Str],
          ["pods": Str, "encryptionKey": Str, "insecureTLS": Bool]),
    func!("BackupDataStats", ["namespace": Str, "backupArtifactPrefix": Str, "backupID": Str],
          ["image": Str, "statsMode": Str, "encryptionKey": Str], pod),
    func!("BackupDataUsingKopiaServer", ["container": Str, "includePath": Str, "namespace": Str, "pod": Str],
          ["snapshotTags": Str, "repositoryServerUserHostname": Str]),
    func!("CheckRepository", ["backupArtifactPrefix": Str],
          ["image": Str, "encryptionKey": Str, "insecureTLS": Bool], pod),
    func!("CopyVolumeData", ["namespace": Str, "volume": Str, "dataArtifactPrefix": Str],
          ["image": Str, "encryptionKey": Str, "mountPath": Str, "insecureTLS": Bool], pod),
    func!("CreateCSISnapshot", ["pvc": Str, "namespace": Str, "snapshotClass": Str], ["name": Str, "labels": StrMap]),
    func!("CreateCSISnapshotStatic", ["name": Str, "namespace": Str, "driver": Str, "snapshotHandle": Str, "snapshotClass": Str], []),
    func!("CreateRDSSnapshot", ["instanceID": Str],
          ["dbEngine": Str, "credentialsSource": Str, "credentialsSecret": Str, "region": Str]),
    func!("DeleteCSISnapshot", ["name": Str, "namespace": Str], []),
    func!("DeleteCSISnapshotContent", ["name": Str], []),
    func!("DeleteData", ["namespace": Str, "backupArtifactPrefix": Str],
          ["image": Str, "backupID": Str, "backupTag": Str, "encryptionKey": Str, "reclaimSpace": Bool, "insecureTLS": Bool], pod),
    func!("DeleteDataAll", ["namespace": Str, "backupArtifactPrefix": Str, "backupInfo": Str],
          ["image": Str, "encryptionKey": Str, "reclaimSpace": Bool, "insecureTLS": Bool], pod),
    func!("DeleteDataUsingKopiaServer", ["backupID": Str, "namespace": Str, "image": Str],
          ["repositoryServerUserHostname": Str, "podAnnotations": StrMap, "podLabels": StrMap]),
    func!("DeleteRDSSnapshot", ["snapshotID": Str],
          ["dbEngine": Str, "credentialsSource": Str, "credentialsSecret": Str, "region": Str]),
    func!("ExportRDSSnapshotToLocation", ["namespace": Str, "instanceID": Str, "snapshotID": Str, "dbEngine": Str],
          ["username": Str, "password": Str, "backupArtifactPrefix": Str, "databases": Any, "securityGroupID": Any,
           "dbSubnetGroup": Str, "podAnnotations": StrMap, "podLabels": StrMap, "credentialsSource": Str,
           "credentialsSecret": Str, "region": Str]),
    func!("KubeExec", ["namespace": Str, "pod": Str, "command": StrList], ["container": Str]),
    func!("KubeExecAll", ["namespace": Str, "pods": Str, "containers": Str, "command": StrList], []),
    func!("KubeOps", ["operation": Str], ["spec": Str, "namespace": Str, "objectReference": Struct]),
    func!("KubeTask", ["image": Str, "command": StrList], ["namespace": Str], pod),
    func!("LocationDelete", ["artifact": Str], []),
    func!("MultiContainerRun", ["backgroundImage": Str, "backgroundCommand": StrList, "outputImage": Str, "outputCommand": StrList],
          ["namespace": Str, "initImage": Str, "initCommand": StrList, "sharedVolumeMedium": Str,
           "sharedVolumeSizeLimit": Str, "sharedVolumeDir": Str], pod),
    func!("PrepareData", ["namespace": Str, "image": Str, "command": StrList],
          ["volumes": StrMap, "serviceaccount": Str, "failOnError": Bool], pod),
    func!("RestoreCSISnapshot", ["name": Str, "pvc": Str, "namespace": Str, "storageClass": Str, "restoreSize": Str],
          ["accessModes": Any, "volumeMode": Str, "labels": StrMap]),
    func!("RestoreData", ["namespace": Str, "image": Str, "backupArtifactPrefix": Str],
          ["restorePath": Str, "encryptionKey": Str, "pod": Str, "volumes": StrMap, "backupTag": Str,
           "backupIdentifier": Str, "backupPath": Str, "insecureTLS": Bool], pod),
    func!("RestoreDataAll", ["namespace": Str, "image": Str, "backupArtifactPrefix": Str, "backupInfo": Str],
          ["restorePath": Str, "encryptionKey": Str, "pods": Str, "insecureTLS": Bool], pod),
    func!("RestoreDataUsingKopiaServer", ["backupIdentifier": Str, "namespace": Str, "restorePath": Str, "image": Str],
          ["pod": Str, "volumes": StrMap, "podOverride": Map, "repositoryServerUserHostname": Str,
           "podAnnotations": StrMap, "podLabels": StrMap]),
    func!("RestoreRDSSnapshot", ["instanceID": Str],
          ["snapshotID": Str, "dbEngine": Str, "backupArtifactPrefix": Str, "backupID": Str, "username": Str,
           "password": Str, "namespace": Str, "securityGroupID": Any, "dbSubnetGroup": Str, "podAnnotations": StrMap,
           "podLabels": StrMap, "credentialsSource": Str, "credentialsSecret": Str, "region": Str]),
    func!("ScaleWorkload", ["replicas": Int], ["namespace": Str, "name": Str, "kind": Str, "waitForReady": Bool]),
    func!("Wait", ["timeout": Str, "conditions": Struct], []),
    func!("WaitV2", ["timeout": Str, "conditions": Struct], []),
];

/// `*UsingKopiaServer` functions that were proposed for Kanister but that no release registers
/// (their pull requests were closed or left open, unmerged), with the pull request: they stay
/// unknown, and the unknown-function error says why.
pub const NEVER_RELEASED: &[(&str, &str)] = &[
    ("BackupDataAllUsingKopiaServer", "kanisterio/kanister#1968"),
    (
        "BackupDataStatsUsingKopiaServer",
        "kanisterio/kanister#1972",
    ),
    ("CopyVolumeDataUsingKopiaServer", "kanisterio/kanister#2143"),
];

/// Looks a function up by its exact (case-sensitive) name, as Kanister does.
pub fn function(name: &str) -> Option<&'static Function> {
    FUNCTIONS.iter().find(|f| f.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_the_31_kanister_functions_sorted_and_unique() {
        assert_eq!(FUNCTIONS.len(), 31);
        for f in FUNCTIONS {
            assert!(
                crate::functions::KANISTER_FUNCTIONS.contains(&f.name),
                "{}",
                f.name
            );
        }
        assert!(FUNCTIONS.windows(2).all(|w| w[0].name < w[1].name));
    }

    #[test]
    fn pod_functions_take_pod_args() {
        let kt = function("KubeTask").unwrap();
        assert_eq!(kt.arg("command"), Some(StrList));
        assert_eq!(kt.arg("podOverride"), Some(Map));
        assert_eq!(kt.arg("pod"), None);
        assert!(function("kubetask").is_none());
        assert!(function("WaitV2").unwrap().renders_own_args());
    }
}
