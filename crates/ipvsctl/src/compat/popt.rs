//! The subset of libpopt's option scanning that ipvsadm relies on:
//! clustered short options (`-Ln`), attached (`-t1.2.3.4:80`, `-w=3`) and
//! separate arguments, `--long=value`, optional arguments that are not
//! taken when the next word starts with `-`, `--` ending the options, and
//! non-option words collected as leftovers (popt permutes them).
//!
//! The scanner is generic over what an option stands for (`K`, popt's
//! `val`): ipvsadm's table carries a typed [`super::Key`] per entry, the
//! default `i32` is popt's own integer code.

/// How an option takes an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// No argument.
    None,
    /// Required argument.
    Required,
    /// Optional argument (`POPT_ARGFLAG_OPTIONAL`).
    Optional,
}

/// An entry of the option table.
#[derive(Debug, Clone, Copy)]
pub struct OptDef<K = i32> {
    /// Long name (without `--`).
    pub long: &'static str,
    /// Short name, if any.
    pub short: Option<char>,
    /// Argument kind.
    pub arg: ArgKind,
    /// Value returned for the option.
    pub val: K,
}

/// popt errors (`poptStrerror` texts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoptError {
    /// `POPT_ERROR_NOARG`.
    NoArg,
    /// `POPT_ERROR_BADOPT`.
    BadOpt,
    /// `POPT_ERROR_UNWANTEDARG`.
    UnwantedArg,
}

impl PoptError {
    /// `poptStrerror`.
    pub fn text(self) -> &'static str {
        match self {
            PoptError::NoArg => "missing argument",
            PoptError::BadOpt => "unknown option",
            PoptError::UnwantedArg => "option does not take an argument",
        }
    }
}

/// One result of [`Popt::next_opt`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next<K = i32> {
    /// An option with its value and argument.
    Opt(K, Option<String>),
    /// No more options (`-1`).
    End,
    /// An error (`< -1`).
    Err(PoptError),
}

/// The scanning context (`poptContext`).
pub struct Popt<'a, K = i32> {
    table: &'a [OptDef<K>],
    argv: &'a [String],
    next: usize,
    /// (argv index, byte offset) of the rest of a short-option cluster.
    char_arg: Option<(usize, usize)>,
    rest_leftover: bool,
    leftovers: Vec<String>,
    next_leftover: usize,
}

impl<'a, K: Copy> Popt<'a, K> {
    /// Start scanning `argv` (`argv[0]` is the program name).
    pub fn new(table: &'a [OptDef<K>], argv: &'a [String]) -> Self {
        Popt {
            table,
            argv,
            next: 1,
            char_arg: None,
            rest_leftover: false,
            leftovers: Vec::new(),
            next_leftover: 0,
        }
    }

    /// `poptBadOption(con, POPT_BADOPTION_NOALIAS)`: the last argv word consumed.
    pub fn bad_option(&self) -> String {
        self.argv
            .get(self.next.saturating_sub(1))
            .cloned()
            .unwrap_or_default()
    }

    /// `poptGetArg`: the next leftover word.
    pub fn get_arg(&mut self) -> Option<String> {
        let v = self.leftovers.get(self.next_leftover).cloned();
        if v.is_some() {
            self.next_leftover += 1;
        }
        v
    }

    fn find_long(&self, name: &str) -> Option<&'a OptDef<K>> {
        self.table.iter().find(|o| o.long == name)
    }

    fn find_short(&self, c: char) -> Option<&'a OptDef<K>> {
        self.table.iter().find(|o| o.short == Some(c))
    }

    /// `poptGetNextOpt`.
    pub fn next_opt(&mut self) -> Next<K> {
        loop {
            let mut long_arg: Option<String> = None;
            let opt: &OptDef<K>;
            if self.char_arg.is_none() {
                if self.next >= self.argv.len() {
                    return Next::End;
                }
                let idx = self.next;
                let orig = &self.argv[idx];
                self.next += 1;
                if self.rest_leftover || !orig.starts_with('-') || orig == "-" {
                    self.leftovers.push(orig.clone());
                    continue;
                }
                if orig == "--" {
                    self.rest_leftover = true;
                    continue;
                }
                if let Some(body) = orig.strip_prefix("--") {
                    let (name, la) = match body.find('=') {
                        Some(i) => (&body[..i], Some(body[i + 1..].to_string())),
                        None => (body, None),
                    };
                    match self.find_long(name) {
                        Some(o) => {
                            opt = o;
                            long_arg = la;
                        }
                        None => return Next::Err(PoptError::BadOpt),
                    }
                } else {
                    // Single dash: no option of ipvsadm's table is ONEDASH, so
                    // this is a cluster of short options.
                    self.char_arg = Some((idx, 1));
                    continue;
                }
            } else {
                let (idx, off) = self.char_arg.take().unwrap_or((0, 0));
                let word = &self.argv[idx];
                let rest = &word[off..];
                let Some(c) = rest.chars().next() else {
                    // "-L=" leaves an empty cluster: popt looks up option '\0'.
                    return Next::Err(PoptError::BadOpt);
                };
                match self.find_short(c) {
                    Some(o) => opt = o,
                    None => return Next::Err(PoptError::BadOpt),
                }
                let after = off + c.len_utf8();
                if after < word.len() {
                    let skip = usize::from(word.as_bytes()[after] == b'=');
                    self.char_arg = Some((idx, after + skip));
                }
            }
            match opt.arg {
                ArgKind::None => {
                    let eq_next = self
                        .char_arg
                        .map(|(i, o)| self.argv[i].as_bytes().get(o) == Some(&b'='))
                        .unwrap_or(false);
                    if long_arg.is_some() || eq_next {
                        return Next::Err(PoptError::UnwantedArg);
                    }
                    return Next::Opt(opt.val, None);
                }
                kind => {
                    let value = if let Some(la) = long_arg {
                        Some(la)
                    } else if let Some((i, o)) = self.char_arg.take() {
                        let w = &self.argv[i];
                        let skip = usize::from(w.as_bytes().get(o) == Some(&b'='));
                        Some(w.get((o + skip).min(w.len())..).unwrap_or("").to_string())
                    } else if self.next >= self.argv.len() {
                        if kind == ArgKind::Required {
                            return Next::Err(PoptError::NoArg);
                        }
                        None
                    } else if kind == ArgKind::Optional && self.argv[self.next].starts_with('-') {
                        None
                    } else {
                        let v = self.argv[self.next].clone();
                        self.next += 1;
                        Some(v)
                    };
                    return Next::Opt(opt.val, value);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &[OptDef] = &[
        OptDef {
            long: "list",
            short: Some('L'),
            arg: ArgKind::None,
            val: 'L' as i32,
        },
        OptDef {
            long: "numeric",
            short: Some('n'),
            arg: ArgKind::None,
            val: 'n' as i32,
        },
        OptDef {
            long: "tcp-service",
            short: Some('t'),
            arg: ArgKind::Required,
            val: 't' as i32,
        },
        OptDef {
            long: "persistent",
            short: Some('p'),
            arg: ArgKind::Optional,
            val: 'p' as i32,
        },
        OptDef {
            long: "weight",
            short: Some('w'),
            arg: ArgKind::Required,
            val: 'w' as i32,
        },
    ];

    fn argv(s: &[&str]) -> Vec<String> {
        std::iter::once("ipvsadm")
            .chain(s.iter().copied())
            .map(String::from)
            .collect()
    }

    fn all(a: &[&str]) -> (Vec<Next>, Vec<String>) {
        let v = argv(a);
        let mut p = Popt::new(T, &v);
        let mut out = Vec::new();
        loop {
            let n = p.next_opt();
            let stop = !matches!(n, Next::Opt(..));
            out.push(n);
            if stop {
                break;
            }
        }
        let mut left = Vec::new();
        while let Some(l) = p.get_arg() {
            left.push(l);
        }
        (out, left)
    }

    #[test]
    fn clusters_and_args() {
        let (o, _) = all(&[
            "-Ln",
            "-t1.2.3.4:80",
            "-w=3",
            "--weight=4",
            "--tcp-service",
            "x",
        ]);
        assert_eq!(
            o,
            vec![
                Next::Opt('L' as i32, None),
                Next::Opt('n' as i32, None),
                Next::Opt('t' as i32, Some("1.2.3.4:80".into())),
                Next::Opt('w' as i32, Some("3".into())),
                Next::Opt('w' as i32, Some("4".into())),
                Next::Opt('t' as i32, Some("x".into())),
                Next::End
            ]
        );
    }

    #[test]
    fn optional_and_leftovers() {
        let (o, l) = all(&["a", "-p", "-n", "b", "-p", "300", "--", "-c"]);
        assert_eq!(o[0], Next::Opt('p' as i32, None));
        assert_eq!(o[2], Next::Opt('p' as i32, Some("300".into())));
        assert_eq!(l, vec!["a", "b", "-c"]);
    }

    #[test]
    fn errors() {
        assert_eq!(all(&["-t"]).0, vec![Next::Err(PoptError::NoArg)]);
        assert_eq!(all(&["--bogus"]).0, vec![Next::Err(PoptError::BadOpt)]);
        assert_eq!(
            all(&["-Lq"]).0,
            vec![Next::Opt('L' as i32, None), Next::Err(PoptError::BadOpt)]
        );
        assert_eq!(
            all(&["--list=3"]).0,
            vec![Next::Err(PoptError::UnwantedArg)]
        );
        // A required argument is taken even if it starts with '-'.
        assert_eq!(
            all(&["-t", "-n"]).0[0],
            Next::Opt('t' as i32, Some("-n".into()))
        );
    }
}
