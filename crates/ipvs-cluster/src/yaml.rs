//! YAML with positions, on serde-saphyr.
//!
//! serde-saphyr is the maintained serde front end of the saphyr YAML
//! parser family (pure Rust, no unsafe, panic-free on bad input, with
//! budgets against alias bombs), and every error it reports carries the
//! line and column of the offending node. `serde_path_to_error` adds the
//! node's path (`services[0].port`) to those errors.
//!
//! Errors found after deserialising (semantic validation: duplicates,
//! rules between fields) name a node by its path; [`Positions`] finds that
//! node's key in the parser's own event stream (the parser serde-saphyr
//! runs on), so they are located like syntax errors.

use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_saphyr::granit_parser::{Event, Parser};
use serde_saphyr::{DefaultMessageFormatter, MessageFormatter};

use crate::ConfigError;

/// Deserialise a YAML document. An empty document is `T`'s `null` (so
/// `Option<T>` reads it as `None`). The error has the node's path, line and
/// column.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, ConfigError> {
    let mut path = None;
    let options = serde_saphyr::options! { with_snippet: false };
    serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            path = Some(e.path().to_string());
            e.into_inner()
        })
    })
    .map_err(|e| {
        let e = e.without_snippet();
        let loc = e.location();
        ConfigError {
            path: path.filter(|p| p != "." && p != "?").unwrap_or_default(),
            line: loc.map(|l| l.line() as usize).filter(|l| *l > 0),
            column: loc.map(|l| l.column() as usize).filter(|c| *c > 0),
            message: message(e, text),
        }
    })
}

/// serde's customary wording where serde-saphyr's is terse (`invalid u16`)
/// or names its own parsing step (`expected string scalar`).
fn message(e: &serde_saphyr::Error, text: &str) -> String {
    use serde_saphyr::Error as E;
    match e {
        E::InvalidScalar { ty, location } => {
            let span = location.span();
            let value = span
                .byte_offset()
                .zip(span.byte_len())
                .and_then(|(o, l)| text.get(o as usize..(o + l) as usize))
                .filter(|v| !v.is_empty() && !v.contains('\n'));
            match value {
                Some(v) => format!("invalid value `{v}`, expected {ty}"),
                None => format!("invalid value, expected {ty}"),
            }
        }
        E::Unexpected { expected, .. } => {
            let what = match *expected {
                "string scalar" | "scalar" => "a single value, not a list or mapping",
                "sequence start" => "a list",
                "mapping start" => "a mapping",
                other => other,
            };
            format!("invalid type: expected {what}")
        }
        _ => DefaultMessageFormatter.format_message(e).into_owned(),
    }
}

/// Serialise a value as a YAML document.
pub fn to_string<T: Serialize>(value: &T) -> Result<String, String> {
    serde_saphyr::to_string(value).map_err(|e| e.to_string())
}

/// The position of every node of a document by its path
/// (`services[1].dests[0].weight`): a mapping value is found at its key,
/// a sequence item at the item. `real_servers` is spelled `dests` (its
/// alias in the cluster file).
pub struct Positions {
    map: HashMap<String, (usize, usize)>,
}

enum Frame {
    /// A mapping; `value` is the path of the value that comes next
    /// (`None`: a key comes next; `Some(None)`: the value of a complex key).
    Map {
        path: String,
        value: Option<Option<String>>,
    },
    Seq {
        path: String,
        next: usize,
    },
    /// Inside a complex key or its value: not a path.
    Skip,
}

impl Positions {
    /// Index a document's nodes (as far as it parses).
    pub fn new(text: &str) -> Positions {
        let mut map = HashMap::new();
        let mut stack: Vec<Frame> = Vec::new();
        for next in Parser::new_from_str(text) {
            let Ok((event, span)) = next else { break };
            let at = (span.start.line(), span.start.col() + 1);
            let collection = match event {
                Event::Scalar(..) | Event::Alias(..) => None,
                Event::MappingStart(..) => Some(true),
                Event::SequenceStart(..) => Some(false),
                Event::MappingEnd | Event::SequenceEnd => {
                    stack.pop();
                    continue;
                }
                _ => continue,
            };
            let path = match stack.last_mut() {
                None => Some(String::new()),
                Some(Frame::Skip) => None,
                Some(Frame::Map { path, value }) => match value.take() {
                    Some(v) => v,
                    None => {
                        if let Event::Scalar(name, ..) = &event {
                            let name = if name == "real_servers" {
                                "dests"
                            } else {
                                name
                            };
                            let p = if path.is_empty() {
                                name.to_string()
                            } else {
                                format!("{path}.{name}")
                            };
                            map.insert(p.clone(), at);
                            *value = Some(Some(p));
                        } else {
                            *value = Some(None);
                        }
                        None
                    }
                },
                Some(Frame::Seq { path, next }) => {
                    let p = format!("{path}[{next}]");
                    *next += 1;
                    map.insert(p.clone(), at);
                    Some(p)
                }
            };
            match (collection, path) {
                (None, _) => {}
                (Some(_), None) => stack.push(Frame::Skip),
                (Some(true), Some(path)) => stack.push(Frame::Map { path, value: None }),
                (Some(false), Some(path)) => stack.push(Frame::Seq { path, next: 0 }),
            }
        }
        Positions { map }
    }

    /// The line and column of a path, or of its nearest located ancestor.
    pub fn find(&self, path: &str) -> (Option<usize>, Option<usize>) {
        let mut p = path;
        loop {
            if let Some((l, c)) = self.map.get(p) {
                return (Some(*l), Some(*c));
            }
            match p.rfind(['.', '[']) {
                Some(i) => p = &p[..i],
                None => return (None, None),
            }
        }
    }

    /// Turn `(path, message)` pairs into located errors.
    pub fn locate(&self, errors: Vec<(String, String)>) -> Vec<ConfigError> {
        errors
            .into_iter()
            .map(|(path, message)| {
                let (line, column) = self.find(&path);
                ConfigError {
                    path,
                    line,
                    column,
                    message,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        items: Vec<Item>,
    }
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Item {
        port: u16,
        #[serde(default)]
        tags: Vec<String>,
    }

    #[test]
    fn errors_have_path_and_position() {
        let e = from_str::<Doc>("items:\n  - port: 80\n  - port: 99999\n").unwrap_err();
        assert_eq!(e.path, "items[1].port");
        assert_eq!((e.line, e.column), (Some(3), Some(11)), "{e}");
        let e = from_str::<Doc>("items:\n  - port: [80]\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("2:11: items[0].port: invalid type"),
            "{e}"
        );
        let e = from_str::<Doc>("items:\n  - port: 1\n    colour: red\n").unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert!(e.message.contains("unknown field `colour`"), "{e}");
        let e = from_str::<Doc>("items: [\n").unwrap_err();
        assert!(e.line.is_some(), "{e}");
        assert_eq!(
            from_str::<Option<Doc>>("").unwrap().map(|d| d.items.len()),
            None
        );
    }

    #[test]
    fn positions_of_keys_and_items() {
        let text = "\
a:
  - x: 1
    real_servers:
      - {y: 2, z: [3, 4]}
      - 5
  - 'q': 6
? [complex, key]
: 7
b: 8
";
        let p = Positions::new(text);
        assert_eq!(p.find("a"), (Some(1), Some(1)));
        assert_eq!(p.find("a[0]"), (Some(2), Some(5)));
        assert_eq!(p.find("a[0].x"), (Some(2), Some(5)));
        assert_eq!(p.find("a[0].dests"), (Some(3), Some(5)));
        assert_eq!(p.find("a[0].dests[0].z"), (Some(4), Some(16)));
        assert_eq!(p.find("a[0].dests[0].z[1]"), (Some(4), Some(23)));
        assert_eq!(p.find("a[0].dests[1]"), (Some(5), Some(9)));
        assert_eq!(p.find("a[1].q"), (Some(6), Some(5)));
        assert_eq!(p.find("a[0].dests[0].nope"), (Some(4), Some(9)));
        assert_eq!(p.find("b"), (Some(9), Some(1)));
        assert_eq!(p.find("nope"), (None, None));
    }
}
