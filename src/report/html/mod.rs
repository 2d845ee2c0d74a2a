//! `report.html`: one self-contained page (inline SVG, CSS and a little
//! JS; nothing fetched at view time) rendered from a `Summary`, so
//! `llmload report DIR` redraws it from summary.json alone. Every table and
//! chart is drawn here, server-side, so the page reads with JavaScript off
//! and prints; the script only adds hover read-outs and legend toggles.
//! Every string from the summary is escaped on its way in (`esc`). The
//! DOM's ids, classes and `data-*` attributes are a contract a browser test
//! asserts (DESIGN.md, "report.html").

mod axis;
mod charts;
mod compare;
mod sections;
mod svg;
mod tables;

#[cfg(test)]
mod tests;

use std::fmt::Write;

use super::fmt::{Whole, num};
use super::summary::Summary;

/// The page for `summary`.
pub(crate) fn render(summary: &Summary) -> String {
    let mut body = String::new();
    sections::identity(&mut body, summary);
    sections::status(&mut body, summary);
    sections::headline(&mut body, summary);
    charts::stage_curve(&mut body, summary);
    charts::slices(&mut body, summary);
    tables::goodput(&mut body, summary);
    tables::definitions(&mut body, summary);
    charts::server_metrics(&mut body, summary);
    sections::thresholds(&mut body, summary);
    sections::accuracy(&mut body, summary);
    sections::generator(&mut body, summary);
    sections::config(&mut body, summary);
    let title = format!("llmload — {}", summary.target);
    page("run", &title, &body)
}

/// Two runs drawn over each other (`llmload compare A B --html OUT`).
#[allow(dead_code)] // wired by the lead
pub(crate) fn render_compare(
    old: &Summary,
    new: &Summary,
    old_name: &str,
    new_name: &str,
) -> String {
    let body = compare::body(old, new, old_name, new_name);
    let title = format!("llmload compare — {old_name} vs {new_name}");
    page("compare", &title, &body)
}

/// `s` safe as HTML text and as a quoted attribute value; control
/// characters (a server's bytes can hold any) are dropped.
pub(super) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => o.push(c),
        }
    }
    o
}

/// A value for people: four digits, whole numbers bare.
pub(super) fn n(v: f64) -> String {
    num(v, 4, Whole::Bare)
}

/// An optional value, `–` when absent.
pub(super) fn opt(v: Option<f64>, unit: &str) -> String {
    match v {
        Some(v) => format!("{}{unit}", n(v)),
        None => "–".to_string(),
    }
}

/// A table cell carrying its raw value (`{}`, the summary's own digits)
/// beside the formatted one; an absent value has no `data-value`.
pub(super) fn value_cell(attr: &str, key: &str, v: Option<f64>, shown: &str) -> String {
    match v {
        Some(raw) => format!(
            "<td class=\"num\" {attr}=\"{}\" data-value=\"{raw}\">{}</td>",
            esc(key),
            esc(shown)
        ),
        None => format!("<td class=\"num\" {attr}=\"{}\">–</td>", esc(key)),
    }
}

/// `<tr><th>k</th><td>v</td></tr>` rows of already-escaped values.
pub(super) fn kv_table(o: &mut String, class: &str, rows: &[(&str, String)]) {
    let _ = write!(o, "<table class=\"kv {class}\">");
    for (k, v) in rows {
        let _ = write!(o, "<tr><th>{}</th><td>{v}</td></tr>", esc(k));
    }
    o.push_str("</table>\n");
}

fn page(kind: &str, title: &str, body: &str) -> String {
    let mut o = String::with_capacity(body.len() + CSS.len() + JS.len() + 2048);
    let _ = write!(
        o,
        "<!doctype html>\n<html lang=\"en\" data-llmload-report=\"{kind}\">\n<head>\n\
         <meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <title>{}</title>\n<style>{CSS}{}</style>\n\
         <script>window.addEventListener('error',function(e){{document.documentElement.dataset.jsError=String(e.message||e);}});</script>\n\
         </head>\n<body>\n<main>\n{body}</main>\n<div id=\"tip\" hidden></div>\n<script>{JS}</script>\n</body>\n</html>\n",
        esc(title),
        palette_css()
    );
    o
}

/// The series colours as classes, for strokes, dots and legend swatches.
fn palette_css() -> String {
    let mut o = String::new();
    for i in 0..8 {
        let _ = write!(
            o,
            ".s{i}{{stroke:var(--c{i});fill:var(--c{i})}}.sw.s{i}{{background:var(--c{i})}}\
             .sw.dash.s{i}{{background:repeating-linear-gradient(90deg,var(--c{i}) 0 5px,transparent 5px 8px)}}"
        );
    }
    o
}

const CSS: &str = r#"
:root{--bg:#fff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--grid:#e8ecf0;--card:#f6f8fa;
--band:rgba(84,110,160,.10);--ok:#1a7f37;--okbg:#dafbe1;--bad:#cf222e;--badbg:#ffebe9;--warn:#9a6700;--warnbg:#fff8c5;
--c0:#0969da;--c1:#cf222e;--c2:#1a7f37;--c3:#bc4c00;--c4:#8250df;--c5:#7d4e00;--c6:#bf3989;--c7:#1b7c83}
@media (prefers-color-scheme: dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;--grid:#262c36;--card:#151b23;
--band:rgba(120,150,220,.14);--ok:#3fb950;--okbg:#12261e;--bad:#f85149;--badbg:#2d1214;--warn:#d29922;--warnbg:#272115;
--c0:#4493f8;--c1:#ff7b72;--c2:#3fb950;--c3:#ffa657;--c4:#bc8cff;--c5:#e3b341;--c6:#f778ba;--c7:#39c5cf}}
*{box-sizing:border-box}
html{background:var(--bg);color:var(--fg)}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans",sans-serif}
main{max-width:1240px;margin:0 auto;padding:12px 20px 40px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
a{color:var(--c0)}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:12px}
pre{background:var(--card);border:1px solid var(--line);padding:8px;overflow:auto;max-height:480px;white-space:pre-wrap;word-break:break-all}
.muted{color:var(--muted)}
table{border-collapse:collapse;margin:4px 0 10px}
th,td{border-bottom:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
thead th{background:var(--card);font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.big{font-size:20px;font-weight:600}
table.kv th{font-weight:500;color:var(--muted);white-space:nowrap}
.scroll{overflow-x:auto}
.banner{border:1px solid;border-radius:6px;padding:8px 12px;margin:8px 0}
.banner.ok{border-color:var(--ok);background:var(--okbg)}
.banner.bad{border-color:var(--bad);background:var(--badbg)}
.banner.warn{border-color:var(--warn);background:var(--warnbg)}
.banner strong{font-size:15px}
.banner ul{margin:4px 0 0;padding-left:20px}
.pass{color:var(--ok);font-weight:600}.fail{color:var(--bad);font-weight:600}
th.preset,td.preset{background:var(--card);font-weight:600}
td small{display:block;color:var(--muted);font-size:11px;font-weight:400;white-space:normal}
nav.toc{font-size:13px;margin:4px 0 8px}nav.toc a{margin-right:10px}
section.slice{border-top:2px solid var(--line);margin-top:24px}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(520px,100%),1fr));gap:8px 16px}
.charts.small{grid-template-columns:repeat(auto-fill,minmax(min(380px,100%),1fr))}
figure.chart{margin:0;break-inside:avoid;page-break-inside:avoid}
figure.chart figcaption{font-weight:600;font-size:13px}
svg.plot{width:100%;height:auto;display:block;font-size:11px}
svg .frame{fill:none;stroke:var(--line)}
svg .grid{stroke:var(--grid);stroke-width:1}
svg .grid.minor{stroke-dasharray:2 3}
svg text{fill:var(--muted);stroke:none}
svg .tick.y{text-anchor:end}svg .tick.x{text-anchor:middle}svg .tick.x.end{text-anchor:end}svg .tick.y2{text-anchor:start}
svg .label.x,svg .label.y2{text-anchor:end}svg .label.y{text-anchor:start}
svg .band{fill:var(--band);stroke:none}
svg .edge{stroke:var(--muted);stroke-dasharray:4 3}
svg .bandlabel{fill:var(--fg);font-weight:600}
svg .nodata{text-anchor:middle;font-size:14px}
svg path.line{fill:none;stroke-width:1.6;stroke-linejoin:round}
svg path.dash{stroke-dasharray:6 3}
svg rect.b0{fill:var(--c0);fill-opacity:.75;stroke:none}
svg .dot{stroke:var(--bg);stroke-width:1}
svg .guide{stroke:var(--muted);stroke-width:1}
svg g.off{display:none}
ul.legend{list-style:none;margin:2px 0 0;padding:0;display:flex;flex-wrap:wrap;gap:2px 14px;font-size:12px}
ul.legend li{cursor:pointer;user-select:none}ul.legend li.off{opacity:.4;text-decoration:line-through}
.sw{display:inline-block;width:14px;height:4px;margin:0 5px 3px 0;vertical-align:middle;border-radius:1px}
#tip{position:absolute;z-index:10;pointer-events:none;background:var(--bg);color:var(--fg);border:1px solid var(--line);
border-radius:4px;padding:4px 8px;font-size:12px;box-shadow:0 2px 8px rgba(0,0,0,.2);white-space:nowrap}
details>summary{cursor:pointer;font-weight:600;margin:6px 0}
@media print{
:root{--bg:#fff;--fg:#000;--muted:#444;--line:#bbb;--grid:#e5e5e5;--card:#f3f3f3;--band:rgba(0,0,0,.07)}
html,body{background:#fff;color:#000}main{max-width:none;padding:0}
#tip,nav.toc,svg .guide{display:none!important}
ul.legend li{cursor:auto}
.charts,.charts.small{grid-template-columns:1fr 1fr}
figure.chart,table,.banner{break-inside:avoid;page-break-inside:avoid}
h2,h3{break-after:avoid;page-break-after:avoid}
pre{max-height:none}
}
"#;

/// Hover read-outs and legend toggles; the page is complete without it.
const JS: &str = r#"
(function(){
var root=document.documentElement,tip=document.getElementById('tip');
function sh(x){var a=Math.abs(x),s=a>=100?x.toFixed(0):a>=10?x.toFixed(1):x.toFixed(2);return s.indexOf('.')>=0?s.replace(/\.?0+$/,''):s;}
function fmt(v,u){var a=Math.abs(v);
if(u==='ms')return a>=1000?sh(v/1000)+' s':sh(v)+' ms';
if(u==='t')return sh(v)+' s';
if(u==='f')return sh(v*100)+'%';
return a>=1e6?sh(v/1e6)+'M':a>=1e3?sh(v/1e3)+'k':sh(v);}
function axis(s){if(!s)return null;var p=s.split(' ');return {lo:+p[0],hi:+p[1],log:p[2].indexOf('log-')===0,u:p[2].replace('log-','')};}
function at(ax,f){if(ax.log){var a=Math.log10(ax.lo),b=Math.log10(ax.hi);return Math.pow(10,a+f*(b-a));}return ax.lo+f*(ax.hi-ax.lo);}
function hide(svg){tip.hidden=true;var g=svg&&svg.querySelector('line.guide');if(g)g.style.display='none';}
Array.prototype.forEach.call(document.querySelectorAll('svg.plot'),function(svg){
var X=axis(svg.dataset.x),Y=axis(svg.dataset.y),Y2=axis(svg.dataset.y2),b=svg.dataset.box.split(' ').map(Number),cache=null;
var guide=document.createElementNS('http://www.w3.org/2000/svg','line');
guide.setAttribute('class','guide');guide.setAttribute('y1',b[1]);guide.setAttribute('y2',b[3]);guide.style.display='none';svg.appendChild(guide);
function series(){if(cache)return cache;cache=[];
Array.prototype.forEach.call(svg.querySelectorAll('g.series'),function(g){var p=g.querySelector('path.line');if(!p)return;
var m=p.getAttribute('d').match(/-?[\d.]+,-?[\d.]+/g)||[];
cache.push({g:g,name:g.dataset.series,ax:g.dataset.axis==='2'?Y2:Y,pts:m.map(function(s){var q=s.split(',');return [+q[0],+q[1]];})});});
return cache;}
svg.addEventListener('mousemove',function(ev){var m=svg.getScreenCTM();if(!m)return;
var pt=svg.createSVGPoint();pt.x=ev.clientX;pt.y=ev.clientY;pt=pt.matrixTransform(m.inverse());
if(pt.x<b[0]||pt.x>b[2]){hide(svg);return;}
var lines=[];
series().forEach(function(s){if(s.g.classList.contains('off'))return;var best=null,bd=1e9;
for(var i=0;i<s.pts.length;i++){var d=Math.abs(s.pts[i][0]-pt.x);if(d<bd){bd=d;best=s.pts[i];}}
if(best&&bd<12)lines.push(s.name+': '+fmt(at(s.ax,(b[3]-best[1])/(b[3]-b[1])),s.ax.u));});
if(!lines.length){hide(svg);return;}
guide.setAttribute('x1',pt.x);guide.setAttribute('x2',pt.x);guide.style.display='';
tip.textContent='';var h=document.createElement('b');h.textContent=fmt(at(X,(pt.x-b[0])/(b[2]-b[0])),X.u);tip.appendChild(h);
lines.forEach(function(l){var d=document.createElement('div');d.textContent=l;tip.appendChild(d);});
tip.hidden=false;tip.style.left=(ev.pageX+14)+'px';tip.style.top=(ev.pageY+10)+'px';});
svg.addEventListener('mouseleave',function(){hide(svg);});});
Array.prototype.forEach.call(document.querySelectorAll('ul.legend li[data-toggle]'),function(li){
li.tabIndex=0;li.setAttribute('role','button');
function toggle(){var off=li.classList.toggle('off'),fig=li.closest('figure');
Array.prototype.forEach.call(fig.querySelectorAll('g.series'),function(g){if(g.dataset.series===li.dataset.toggle)g.classList.toggle('off',off);});}
li.addEventListener('click',toggle);
li.addEventListener('keydown',function(e){if(e.key==='Enter'||e.key===' '){e.preventDefault();toggle();}});});
root.dataset.ready='1';
})();
"#;
