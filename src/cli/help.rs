//! `tinylet --help` and `tinylet COMMAND --help|-h`: every command with its flags and an
//! example. Kept in one table so a new flag is added where its neighbours are listed,
//! and so the tests can check that every command has its text.

/// The top-level usage: commands, global flags, the `exec` `--` rule.
pub const USAGE: &str =
    "usage: tinylet [COMMAND] [options]   (tinylet COMMAND --help for its flags)

commands:
  run                      run the agent
  apply -f FILE|DIR|-      create or update pods, configmaps, secrets (JSON or YAML)
  delete KIND NS/NAME...   delete a pod, configmap or secret
  get pods|pod|configmaps|secrets|node   show objects, kubectl-style (-w: watch pods)
  describe pod NS/NAME     a pod's containers, states, conditions, volumes, events
  logs NS/NAME             a container's logs
  exec NS/NAME -- CMD...   run a command in a container (-it: a shell)
  cri version|pods|ps|images|imagefs   talk to the runtime directly (like crictl)
  check-config FILE        validate a config and print the effective values
  version                  print the version
  help [COMMAND]           this text, or a command's

global options (every command; before `--` in exec, after it they belong to CMD):
  --config FILE            config file (default: $TINYLET_CONFIG, else
                           /etc/tinylet/config.json)
  --state-dir DIR          override the config's stateDir
  -h, --help               help
";

/// Per command: its name and its help text (usage, flags, example).
const COMMANDS: &[(&str, &str)] = &[
    (
        "run",
        "usage: tinylet run [--config FILE] [--state-dir DIR]
Runs the agent until stopped; the config file must exist.
example: tinylet run --config /etc/tinylet/config.json
",
    ),
    (
        "apply",
        "usage: tinylet apply -f FILE|DIR|- [--validate=strict|warn|ignore]
  -f, --filename FILE      a .json/.yaml/.yml file (YAML documents, kind: List),
                           a directory of them, or - (stdin, JSON if it starts with {)
      --validate=MODE      fields no v1 object has (typos): warn (default), strict
                           (refuse the object) or ignore
example: tinylet apply -f examples/pods/hello.yaml
",
    ),
    (
        "delete",
        "usage: tinylet delete pod|configmap|secret NS/NAME... | KIND NAME... -n NS | KIND/NAME...
       tinylet delete -f FILE|DIR|-
  -n, --namespace NS       namespace of names without one (default: default)
  -f, --filename FILE      delete the objects the manifests name (as apply -f reads them)
example: tinylet delete pod default/hello
",
    ),
    (
        "get",
        "usage: tinylet get pods [NAME...] | pod NS/NAME | configmaps | secrets | node
  -n, --namespace NS       namespace (default: default)
  -A, --all-namespaces     every namespace
  -o, --output FORMAT      json, yaml, or wide (pods: IP, NODE, SOURCE)
  -w, --watch              pods: the table, then each row that changes (until Ctrl-C)
node: pod counts and the pressure conditions with the thresholds met
example: tinylet get pods -A -o wide
",
    ),
    (
        "describe",
        "usage: tinylet describe pod NS/NAME | pod NAME -n NS
  -n, --namespace NS       namespace of a NAME without one
The pod as kubectl describe shows it: containers with their state and last state
(reasons and messages: why a pull failed, why a container crashed), restarts,
resources, environment, mounts; conditions, volumes and the pod's recent events (kept
in the agent's memory: shown while the agent runs).
example: tinylet describe pod default/hello
",
    ),
    (
        "logs",
        "usage: tinylet logs NS/NAME [options]
  -c, --container C        the container (needed when the pod has several)
  -n, --namespace NS       namespace of a NAME without one
  -p, --previous           the instance before the latest (after a restart)
  -f, --follow             keep printing new output
      --tail N             only the last N lines (-1: all)
      --timestamps         prefix each line with its time
example: tinylet logs default/hello -c web --tail 20
",
    ),
    (
        "exec",
        "usage: tinylet exec NS/NAME [-c C] [-i] [-t] [--timeout D] [--config FILE] -- CMD [ARGS...]
  -c, --container C        the container (needed when the pod has several)
  -i, --stdin              pass stdin to the command (streamed, CRI Exec)
  -t, --tty                run the command on a terminal (raw local terminal, resized
                           with the window); -it for an interactive shell
      --timeout D          stop the command after D (e.g. 30s; plain form only)
Options go before `--`, the command after it. Exits with the command's exit code
(before it runs, tinylet's own: 1 failed, 2 usage, 3 not found). Without -i/-t the
output comes when the command ends (ExecSync). The runtime's v4 stream protocol cannot
close the command's stdin alone: at EOF of a piped stdin the command keeps running
until it ends by itself (use a command that stops reading, e.g. head -n N).
example: tinylet exec default/hello -- cat /www/index.html
example: tinylet exec -it default/hello -- sh
",
    ),
    (
        "cri",
        "usage: tinylet cri version|pods|ps|images|imagefs [options]
  -a, --all                ps: all containers, not only running ones
      --endpoint URL       runtime endpoint (default: the config's runtimeEndpoint)
      --image-endpoint URL image service endpoint (default: the runtime endpoint)
example: tinylet cri ps -a
",
    ),
    (
        "check-config",
        "usage: tinylet check-config FILE [--state-dir DIR] [--connect]
Validates FILE and prints the effective values as JSON (nodeName: the host name
when unset).
      --connect            with apiServer: also connect and look up the Node
example: tinylet check-config /etc/tinylet/config.json
",
    ),
    (
        "version",
        "usage: tinylet version   (also --version, -V)
example: tinylet version
",
    ),
    (
        "help",
        "usage: tinylet help [COMMAND]   (also COMMAND --help, COMMAND -h)
example: tinylet help get
",
    ),
];

/// The help text of `command`, if it is one.
pub fn of(command: &str) -> Option<&'static str> {
    COMMANDS
        .iter()
        .find(|(c, _)| *c == command)
        .map(|(_, h)| *h)
}

/// Every command name, for the tests.
pub fn commands() -> impl Iterator<Item = &'static str> {
    COMMANDS.iter().map(|(c, _)| *c)
}

/// Whether the words of a command (before `--`: after it they are exec's command) ask
/// for help.
pub fn asked(words: &[String]) -> bool {
    words
        .iter()
        .take_while(|w| *w != "--")
        .any(|w| w == "--help" || w == "-h")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_in_the_usage_has_help_with_an_example() {
        for c in commands() {
            assert!(USAGE.contains(&format!("\n  {c} ")), "{c} not in the usage");
            let h = of(c).unwrap();
            assert!(h.starts_with(&format!("usage: tinylet {c}")), "{c}");
            assert!(h.contains("example: tinylet "), "{c}");
        }
    }

    #[test]
    fn help_words_after_the_double_dash_belong_to_the_command() {
        let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert!(asked(&w("pods -h")));
        assert!(asked(&w("ns/p --help -- ls")));
        assert!(!asked(&w("ns/p -- ls -h")));
    }
}
