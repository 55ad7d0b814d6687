//! Parser for Go text/template, after Go's `parse.go`.
//!
//! The tree borrows the template text (`Cow`: quoted strings with escapes are owned), so that a
//! check (`template::check`) copies no text; [`Tree::into_owned`] makes a tree to keep.

use super::funcs;
use super::lexer::{Tok, Token, lex, tok_text};
use super::limits::MAX_NESTING;
use std::borrow::Cow;
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq)]
pub enum Node<'a> {
    Text(Cow<'a, str>),
    Action(usize, Pipe<'a>),
    If(Control<'a>),
    Range(Control<'a>),
    With(Control<'a>),
    Break(usize),
    Continue(usize),
    /// `{{template "name" pipeline}}` (and the call half of `{{block}}`).
    Template(Call<'a>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Call<'a> {
    pub line: usize,
    pub name: Cow<'a, str>,
    pub pipe: Option<Pipe<'a>>,
}

/// The main template plus the templates it defines (`define`, `block`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tree<'a> {
    pub root: Vec<Node<'a>>,
    pub defs: BTreeMap<Cow<'a, str>, Vec<Node<'a>>>,
}

/// The name Kanister gives every template (`template.New("config")`).
pub const ROOT_NAME: &str = "config";

#[derive(Clone, Debug, PartialEq)]
pub struct Control<'a> {
    pub line: usize,
    pub pipe: Pipe<'a>,
    pub list: Vec<Node<'a>>,
    pub else_list: Option<Vec<Node<'a>>>,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Pipe<'a> {
    pub decl: Vec<Cow<'a, str>>,
    pub is_assign: bool,
    pub cmds: Vec<Cmd<'a>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Cmd<'a> {
    pub args: Vec<Arg<'a>>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Arg<'a> {
    /// `.A.B` relative to dot.
    Field(Vec<Cow<'a, str>>),
    Dot,
    /// `$x.A.B`
    Variable(Cow<'a, str>, Vec<Cow<'a, str>>),
    /// A function name.
    Func(Cow<'a, str>),
    /// `(pipe).A.B`
    Chain(Box<Arg<'a>>, Vec<Cow<'a, str>>),
    Pipe(Box<Pipe<'a>>),
    Str(Cow<'a, str>),
    Int(i64),
    Float(f64),
    Bool(bool),
    Nil,
}

// ---- owning a tree (to keep it past the text it was parsed from) ----

fn own(s: Cow<'_, str>) -> Cow<'static, str> {
    Cow::Owned(s.into_owned())
}

fn own_all(v: Vec<Cow<'_, str>>) -> Vec<Cow<'static, str>> {
    v.into_iter().map(own).collect()
}

fn own_nodes(nodes: Vec<Node<'_>>) -> Vec<Node<'static>> {
    nodes.into_iter().map(Node::into_owned).collect()
}

impl Tree<'_> {
    /// The same tree, its strings copied out of the template text.
    pub fn into_owned(self) -> Tree<'static> {
        Tree {
            root: own_nodes(self.root),
            defs: self
                .defs
                .into_iter()
                .map(|(name, body)| (own(name), own_nodes(body)))
                .collect(),
        }
    }
}

impl Node<'_> {
    pub fn into_owned(self) -> Node<'static> {
        match self {
            Node::Text(t) => Node::Text(own(t)),
            Node::Action(line, p) => Node::Action(line, p.into_owned()),
            Node::If(c) => Node::If(c.into_owned()),
            Node::Range(c) => Node::Range(c.into_owned()),
            Node::With(c) => Node::With(c.into_owned()),
            Node::Break(line) => Node::Break(line),
            Node::Continue(line) => Node::Continue(line),
            Node::Template(Call { line, name, pipe }) => Node::Template(Call {
                line,
                name: own(name),
                pipe: pipe.map(Pipe::into_owned),
            }),
        }
    }
}

impl Control<'_> {
    pub fn into_owned(self) -> Control<'static> {
        Control {
            line: self.line,
            pipe: self.pipe.into_owned(),
            list: own_nodes(self.list),
            else_list: self.else_list.map(own_nodes),
        }
    }
}

impl Pipe<'_> {
    pub fn into_owned(self) -> Pipe<'static> {
        Pipe {
            decl: own_all(self.decl),
            is_assign: self.is_assign,
            cmds: self
                .cmds
                .into_iter()
                .map(|c| Cmd {
                    args: c.args.into_iter().map(Arg::into_owned).collect(),
                })
                .collect(),
        }
    }
}

impl Arg<'_> {
    pub fn into_owned(self) -> Arg<'static> {
        match self {
            Arg::Field(chain) => Arg::Field(own_all(chain)),
            Arg::Dot => Arg::Dot,
            Arg::Variable(v, chain) => Arg::Variable(own(v), own_all(chain)),
            Arg::Func(name) => Arg::Func(own(name)),
            Arg::Chain(inner, chain) => Arg::Chain(Box::new(inner.into_owned()), own_all(chain)),
            Arg::Pipe(p) => Arg::Pipe(Box::new(p.into_owned())),
            Arg::Str(s) => Arg::Str(own(s)),
            Arg::Int(i) => Arg::Int(i),
            Arg::Float(f) => Arg::Float(f),
            Arg::Bool(b) => Arg::Bool(b),
            Arg::Nil => Arg::Nil,
        }
    }
}

pub type ParseResult<T> = Result<T, (usize, String)>;

struct Parser<'a> {
    toks: Vec<Token<'a>>,
    pos: usize,
    /// Variables declared in scope (`$x`), borrowed from the text; `$` is always in scope
    /// ([`Parser::is_var`]), so that most templates, which declare none, allocate no list.
    vars: Vec<&'a str>,
    range_depth: usize,
    /// Parenthesized pipelines and block bodies currently open.
    depth: usize,
    defs: BTreeMap<Cow<'a, str>, Vec<Node<'a>>>,
}

/// The words that start a control action.
const KEYWORDS: [&str; 10] = [
    "end", "else", "if", "range", "with", "break", "continue", "define", "template", "block",
];

#[derive(PartialEq)]
enum Stop {
    Eof,
    End,
    Else,
}

pub fn parse(src: &str) -> ParseResult<Tree<'_>> {
    let toks = lex(src)?;
    let mut p = Parser {
        toks,
        pos: 0,
        vars: Vec::new(),
        range_depth: 0,
        depth: 0,
        defs: BTreeMap::new(),
    };
    let (list, end) = p.item_list(true)?;
    match end {
        Stop::Eof => {}
        Stop::End => return Err((p.line(), "unexpected {{end}}".into())),
        Stop::Else => return Err((p.line(), "unexpected {{else}}".into())),
    }
    // Go adds the main tree last: a non-empty `define "config"` replaces an
    // empty main template and conflicts with a non-empty one.
    let root = match p.defs.remove(ROOT_NAME) {
        Some(def) if is_empty_tree(&list) => def,
        Some(_) => {
            return Err((
                1,
                format!("template: multiple definition of template {ROOT_NAME:?}"),
            ));
        }
        None => list,
    };
    Ok(Tree { root, defs: p.defs })
}

/// Go's `parse.IsEmptyTree`: only blank text.
fn is_empty_tree(nodes: &[Node<'_>]) -> bool {
    nodes
        .iter()
        .all(|n| matches!(n, Node::Text(t) if t.trim().is_empty()))
}

fn nesting_error(line: usize) -> (usize, String) {
    (
        line,
        format!(
            "template nests deeper than {MAX_NESTING} levels (parenthesized pipelines and \
             if/range/with/define/block bodies inside each other); flatten it, e.g. with variables"
        ),
    )
}

impl<'a> Parser<'a> {
    fn is_var(&self, v: &str) -> bool {
        v == "$" || self.vars.contains(&v)
    }

    fn line(&self) -> usize {
        self.toks
            .get(self.pos.min(self.toks.len().saturating_sub(1)))
            .map(|t| t.line)
            .unwrap_or(1)
    }

    /// The next token, taken out of the list rather than copied: the parser goes back only
    /// over tokens it peeked at, never over one it took.
    fn next(&mut self) -> Option<Tok<'a>> {
        let t = self
            .toks
            .get_mut(self.pos)
            .map(|t| std::mem::replace(&mut t.tok, Tok::Space));
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    fn peek_text(&self) -> String {
        self.peek().map(tok_text).unwrap_or_else(|| "EOF".into())
    }

    fn peek(&self) -> Option<&Tok<'a>> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn skip_space(&mut self) {
        // A pattern, not `==`: the derived PartialEq of a token is a call per space.
        while matches!(self.peek(), Some(Tok::Space)) {
            self.pos += 1;
        }
    }

    fn next_non_space(&mut self) -> Option<Tok<'a>> {
        self.skip_space();
        self.next()
    }

    fn peek_non_space(&mut self) -> Option<&Tok<'a>> {
        self.skip_space();
        self.peek()
    }

    fn err<T>(&self, msg: impl Into<String>) -> ParseResult<T> {
        Err((self.line(), msg.into()))
    }

    fn expect_right(&mut self, ctx: &str) -> ParseResult<()> {
        match self.next_non_space() {
            Some(Tok::RightDelim) => Ok(()),
            Some(t) => self.err(format!("unexpected {} in {ctx}", tok_text(&t))),
            None => self.err(format!("unexpected EOF in {ctx}")),
        }
    }

    /// One more level of nesting, refused beyond [`MAX_NESTING`].
    fn nest(&mut self) -> ParseResult<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(nesting_error(self.line()));
        }
        Ok(())
    }

    /// Parse nodes until EOF, `{{end}}` or `{{else`; `define` only at `top`.
    fn item_list(&mut self, top: bool) -> ParseResult<(Vec<Node<'a>>, Stop)> {
        let mut list = Vec::new();
        loop {
            match self.next() {
                None => return Ok((list, Stop::Eof)),
                Some(Tok::Text(t)) => list.push(Node::Text(Cow::Borrowed(t))),
                Some(Tok::LeftDelim) => {
                    let line = self.line();
                    // Only which keyword it is matters here: no copy of the token.
                    let keyword = match self.peek_non_space() {
                        Some(Tok::Ident(w)) => KEYWORDS.iter().copied().find(|k| k == w),
                        _ => None,
                    };
                    match keyword {
                        Some("end") => {
                            self.pos += 1;
                            self.expect_right("end")?;
                            return Ok((list, Stop::End));
                        }
                        Some("else") => {
                            self.pos += 1;
                            return Ok((list, Stop::Else));
                        }
                        Some(w) if w == "if" || w == "range" || w == "with" => {
                            self.pos += 1;
                            let c = self.control(w, line)?;
                            list.push(match w {
                                "if" => Node::If(c),
                                "range" => Node::Range(c),
                                _ => Node::With(c),
                            });
                        }
                        Some(w) if w == "break" || w == "continue" => {
                            self.pos += 1;
                            if self.range_depth == 0 {
                                return self.err(format!("{{{{{w}}}}} outside {{{{range}}}}"));
                            }
                            self.expect_right(w)?;
                            list.push(if w == "break" {
                                Node::Break(line)
                            } else {
                                Node::Continue(line)
                            });
                        }
                        Some(w) if w == "define" && top => {
                            self.pos += 1;
                            let (name, body) = self.definition("define")?;
                            self.add_def(name, body)?;
                        }
                        Some("define") => {
                            return self.err("unexpected <define> in command");
                        }
                        Some("template") => {
                            self.pos += 1;
                            let name = self.template_name("template")?;
                            let pipe = match self.peek_non_space() {
                                Some(Tok::RightDelim) => {
                                    self.pos += 1;
                                    None
                                }
                                _ => Some(self.pipeline("template", true)?),
                            };
                            list.push(Node::Template(Call { line, name, pipe }));
                        }
                        Some("block") => {
                            self.pos += 1;
                            let name = self.template_name("block")?;
                            let pipe = self.pipeline("block", true)?;
                            let (_, body) = self.body_of("block")?;
                            self.add_def(name.clone(), body)?;
                            list.push(Node::Template(Call {
                                line,
                                name,
                                pipe: Some(pipe),
                            }));
                        }
                        _ => {
                            let pipe = self.pipeline("command", true)?;
                            list.push(Node::Action(line, pipe));
                        }
                    }
                }
                Some(t) => return self.err(format!("unexpected {}", tok_text(&t))),
            }
        }
    }

    /// The quoted name after `template`, `define` or `block`.
    fn template_name(&mut self, ctx: &str) -> ParseResult<Cow<'a, str>> {
        match self.next_non_space() {
            Some(Tok::Str(s)) => Ok(s),
            Some(t) => self.err(format!("unexpected {} in {ctx} clause", tok_text(&t))),
            None => self.err(format!("unexpected EOF in {ctx} clause")),
        }
    }

    /// `"name"}} body {{end}}` of a `define`.
    fn definition(&mut self, ctx: &str) -> ParseResult<(Cow<'a, str>, Vec<Node<'a>>)> {
        let name = self.template_name(ctx)?;
        self.expect_right(ctx)?;
        let (_, body) = self.body_of(ctx)?;
        Ok((name, body))
    }

    /// A template body up to `{{end}}`, parsed as its own tree: no
    /// variables of the enclosing template, no enclosing `range`.
    fn body_of(&mut self, ctx: &str) -> ParseResult<((), Vec<Node<'a>>)> {
        self.nest()?;
        let vars = std::mem::take(&mut self.vars);
        let range_depth = std::mem::replace(&mut self.range_depth, 0);
        let res = self.item_list(false);
        self.vars = vars;
        self.range_depth = range_depth;
        self.depth -= 1;
        match res? {
            (body, Stop::End) => Ok(((), body)),
            (_, Stop::Else) => self.err(format!("unexpected {{{{else}}}} in {ctx}")),
            (_, Stop::Eof) => self.err(format!("unexpected EOF in {ctx}")),
        }
    }

    /// Go's `Tree.add`: an empty body never replaces, two non-empty ones conflict.
    fn add_def(&mut self, name: Cow<'a, str>, body: Vec<Node<'a>>) -> ParseResult<()> {
        match self.defs.get(&name) {
            Some(old) if !is_empty_tree(old) => {
                if is_empty_tree(&body) {
                    return Ok(());
                }
                self.err(format!(
                    "template: multiple definition of template {name:?}"
                ))
            }
            _ => {
                self.defs.insert(name, body);
                Ok(())
            }
        }
    }

    fn control(&mut self, ctx: &str, line: usize) -> ParseResult<Control<'a>> {
        self.nest()?;
        let res = self.control_inner(ctx, line);
        self.depth -= 1;
        res
    }

    fn control_inner(&mut self, ctx: &str, line: usize) -> ParseResult<Control<'a>> {
        let mark = self.vars.len();
        let pipe = self.pipeline(ctx, true)?;
        if ctx == "range" {
            self.range_depth += 1;
        }
        let res = self.item_list(false);
        if ctx == "range" {
            self.range_depth -= 1;
        }
        let (list, end) = res?;
        let else_list = match end {
            Stop::End => None,
            Stop::Eof => return self.err(format!("unexpected EOF in {ctx}")),
            Stop::Else => {
                // `{{else if ...}}` / `{{else with ...}}` chain into a nested control.
                match self.peek_non_space().cloned() {
                    Some(Tok::Ident(w))
                        if (w == "if" && ctx == "if") || (w == "with" && ctx == "with") =>
                    {
                        let l = self.line();
                        self.pos += 1;
                        let c = self.control(w, l)?;
                        Some(vec![if w == "if" {
                            Node::If(c)
                        } else {
                            Node::With(c)
                        }])
                    }
                    _ => {
                        self.expect_right("else")?;
                        let (el, end) = self.item_list(false)?;
                        match end {
                            Stop::End => Some(el),
                            Stop::Else => return self.err("expected end; found {{else}}"),
                            Stop::Eof => return self.err(format!("unexpected EOF in {ctx}")),
                        }
                    }
                }
            }
        };
        self.vars.truncate(mark);
        Ok(Control {
            line,
            pipe,
            list,
            else_list,
        })
    }

    /// Parse a pipeline up to `}}` (`action`) or `)`.
    fn pipeline(&mut self, ctx: &str, action: bool) -> ParseResult<Pipe<'a>> {
        let mut pipe = Pipe::default();
        // Declarations.
        loop {
            let save = self.pos;
            let Some(Tok::Variable(v)) = self.peek_non_space().cloned() else {
                break;
            };
            self.pos += 1;
            match self.peek_non_space().cloned() {
                Some(Tok::Assign) | Some(Tok::Declare) => {
                    let assign = matches!(self.peek(), Some(Tok::Assign));
                    self.pos += 1;
                    if assign && !self.is_var(v) {
                        return self.err(format!("undefined variable {v:?}"));
                    }
                    pipe.is_assign = assign;
                    pipe.decl.push(Cow::Borrowed(v));
                    if !assign {
                        self.vars.push(v);
                    }
                    break;
                }
                Some(Tok::Comma) => {
                    self.pos += 1;
                    pipe.decl.push(Cow::Borrowed(v));
                    self.vars.push(v);
                    if ctx == "range" && pipe.decl.len() < 2 {
                        match self.peek_non_space() {
                            Some(Tok::Variable(_)) => continue,
                            _ => return self.err("range can only initialize variables"),
                        }
                    }
                    return self.err(format!("too many declarations in {ctx}"));
                }
                _ => {
                    self.pos = save;
                    break;
                }
            }
        }
        if pipe.decl.len() == 2 {
            // `range $i, $e :=` requires the declare token after the second variable.
            if !matches!(
                self.toks.get(self.pos.wrapping_sub(1)).map(|t| &t.tok),
                Some(Tok::Declare | Tok::Assign)
            ) {
                return self.err("range can only initialize variables");
            }
        }
        loop {
            match self.peek_non_space() {
                Some(Tok::RightDelim) if action => {
                    self.pos += 1;
                    break;
                }
                Some(Tok::RParen) if !action => {
                    self.pos += 1;
                    break;
                }
                None => return self.err(format!("unclosed action in {ctx}")),
                Some(Tok::RightDelim) | Some(Tok::RParen) => {
                    return self.err(format!("unexpected {} in {ctx}", self.peek_text()));
                }
                Some(_) => {
                    let cmd = self.command()?;
                    pipe.cmds.push(cmd);
                }
            }
        }
        if pipe.cmds.is_empty() {
            return self.err(format!("missing value for {ctx}"));
        }
        for (i, c) in pipe.cmds.iter().enumerate().skip(1) {
            if matches!(
                c.args[0],
                Arg::Bool(_) | Arg::Dot | Arg::Nil | Arg::Int(_) | Arg::Float(_) | Arg::Str(_)
            ) {
                return self.err(format!(
                    "non executable command in pipeline stage {}",
                    i + 1
                ));
            }
        }
        Ok(pipe)
    }

    fn command(&mut self) -> ParseResult<Cmd<'a>> {
        let mut args = Vec::new();
        loop {
            self.skip_space();
            let op = self.operand()?;
            match op {
                Some(a) => args.push(a),
                None => return self.err(format!("unexpected {} in operand", self.peek_text())),
            }
            match self.peek() {
                Some(Tok::Space) => {
                    self.skip_space();
                    match self.peek() {
                        Some(Tok::RightDelim) | Some(Tok::RParen) => break,
                        Some(Tok::Pipe) => {
                            self.pos += 1;
                            break;
                        }
                        _ => continue,
                    }
                }
                Some(Tok::RightDelim) | Some(Tok::RParen) => break,
                Some(Tok::Pipe) => {
                    self.pos += 1;
                    break;
                }
                Some(t) => return self.err(format!("unexpected {} in operand", tok_text(t))),
                None => return self.err("unclosed action"),
            }
        }
        if args.is_empty() {
            return self.err("empty command");
        }
        Ok(Cmd { args })
    }

    fn fields(&mut self) -> Vec<Cow<'a, str>> {
        let mut f = Vec::new();
        while let Some(Token {
            tok: Tok::Field(n), ..
        }) = self.toks.get(self.pos)
        {
            f.push(Cow::Borrowed(*n));
            self.pos += 1;
        }
        f
    }

    fn operand(&mut self) -> ParseResult<Option<Arg<'a>>> {
        let Some(term) = self.term()? else {
            return Ok(None);
        };
        if let Some(Tok::Field(_)) = self.peek() {
            let chain = self.fields();
            return Ok(Some(match term {
                Arg::Field(mut f) => {
                    f.extend(chain);
                    Arg::Field(f)
                }
                Arg::Variable(v, mut f) => {
                    f.extend(chain);
                    Arg::Variable(v, f)
                }
                Arg::Bool(_) | Arg::Str(_) | Arg::Int(_) | Arg::Float(_) | Arg::Nil | Arg::Dot => {
                    return self.err("unexpected . after term");
                }
                other => Arg::Chain(Box::new(other), chain),
            }));
        }
        Ok(Some(term))
    }

    fn term(&mut self) -> ParseResult<Option<Arg<'a>>> {
        // Taken out rather than copied; put back when it is not consumed here (an error ends
        // the parse, so it needs no putting back).
        let Some(slot) = self.toks.get_mut(self.pos) else {
            return Ok(None);
        };
        let tok = std::mem::replace(&mut slot.tok, Tok::Space);
        let arg = match tok {
            Tok::Ident(name) => {
                if !funcs::is_defined(name) {
                    if funcs::is_sprig_unsupported(name) {
                        return self.err(format!(
                            "function {name:?} not supported (sprig function not implemented by blueprint-operator)"
                        ));
                    }
                    return self.err(format!("function {name:?} not defined"));
                }
                self.pos += 1;
                Arg::Func(Cow::Borrowed(name))
            }
            Tok::Dot => {
                self.pos += 1;
                Arg::Dot
            }
            Tok::Nil => {
                self.pos += 1;
                Arg::Nil
            }
            Tok::Variable(v) => {
                if !self.is_var(v) {
                    return self.err(format!("undefined variable {v:?}"));
                }
                self.pos += 1;
                Arg::Variable(Cow::Borrowed(v), Vec::new())
            }
            tok @ Tok::Field(_) => {
                self.toks[self.pos].tok = tok;
                Arg::Field(self.fields())
            }
            Tok::Bool(b) => {
                self.pos += 1;
                Arg::Bool(b)
            }
            Tok::Str(s) => {
                self.pos += 1;
                Arg::Str(s)
            }
            Tok::Number(n) => {
                self.pos += 1;
                parse_number(n).ok_or((self.line(), format!("illegal number syntax: {n:?}")))?
            }
            Tok::Char(c) => {
                self.pos += 1;
                Arg::Int(
                    parse_char(c)
                        .ok_or((self.line(), format!("malformed character constant: {c}")))?,
                )
            }
            Tok::LParen => {
                self.pos += 1;
                self.nest()?;
                let p = self.pipeline("parenthesized pipeline", false);
                self.depth -= 1;
                Arg::Pipe(Box::new(p?))
            }
            tok => {
                self.toks[self.pos].tok = tok;
                return Ok(None);
            }
        };
        Ok(Some(arg))
    }
}

fn parse_number(s: &str) -> Option<Arg<'static>> {
    let clean: String = s.chars().filter(|c| *c != '_').collect();
    let (neg, body) = match clean.strip_prefix('-') {
        Some(b) => (true, b.to_string()),
        None => (false, clean.trim_start_matches('+').to_string()),
    };
    let lower = body.to_ascii_lowercase();
    // Magnitudes parse as u64 so that i64::MIN (`-9223372036854775808`), which Go accepts, fits.
    let radix_val = if let Some(h) = lower.strip_prefix("0x") {
        Some(u64::from_str_radix(h, 16).ok()?)
    } else if let Some(o) = lower.strip_prefix("0o") {
        Some(u64::from_str_radix(o, 8).ok()?)
    } else if let Some(b) = lower.strip_prefix("0b") {
        Some(u64::from_str_radix(b, 2).ok()?)
    } else if lower.len() > 1 && lower.starts_with('0') && lower.bytes().all(|c| c.is_ascii_digit())
    {
        Some(u64::from_str_radix(&lower[1..], 8).ok()?)
    } else {
        None
    };
    if let Some(v) = radix_val {
        return signed(neg, v);
    }
    if lower.contains(['.', 'e']) {
        let f: f64 = lower.parse().ok()?;
        return Some(Arg::Float(if neg { -f } else { f }));
    }
    signed(neg, lower.parse().ok()?)
}

/// An int literal of the given sign and magnitude, when it fits an int64 as Go requires.
fn signed(neg: bool, magnitude: u64) -> Option<Arg<'static>> {
    let v = if neg {
        -i128::from(magnitude)
    } else {
        i128::from(magnitude)
    };
    i64::try_from(v).ok().map(Arg::Int)
}

fn parse_char(s: &str) -> Option<i64> {
    let inner = s.strip_prefix('\'')?.strip_suffix('\'')?;
    let mut it = inner.chars();
    let c = it.next()?;
    if c != '\\' {
        return if it.next().is_none() {
            Some(c as i64)
        } else {
            None
        };
    }
    let e = it.next()?;
    let rest: String = it.collect();
    let v = match e {
        'n' => '\n' as i64,
        't' => '\t' as i64,
        'r' => '\r' as i64,
        'a' => 7,
        'b' => 8,
        'f' => 12,
        'v' => 11,
        '\\' => '\\' as i64,
        '\'' => '\'' as i64,
        'x' | 'u' | 'U' => return i64::from_str_radix(&rest, 16).ok(),
        '0'..='7' => return i64::from_str_radix(&format!("{e}{rest}"), 8).ok(),
        _ => return None,
    };
    if rest.is_empty() { Some(v) } else { None }
}
