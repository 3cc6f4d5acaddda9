"""The viewer page: one HTML document with its CSS, JavaScript and the card's data inline (no external resource,
no network). The data sits in a `<script type="application/json">` element with `<` escaped, so no text of the
card can end the element or run as markup; the script inserts card text only through an escaping function."""

from __future__ import annotations

import json
from typing import Any

from engine.cards.view_page_opt import OPT_CSS, OPT_JS

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:10px 16px}header h1{font-size:17px;margin:0}
header .sub{color:#b8c0cc;font-size:12px}main{display:grid;grid-template-columns:minmax(420px,1fr) 1.3fr;gap:12px;
padding:12px}section{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:10px;margin-bottom:12px}
h2{font-size:15px;margin:0 0 8px}table{border-collapse:collapse;width:100%}td,th{padding:3px 6px;
border-bottom:1px solid #eef0f3;text-align:left;vertical-align:top;font-size:13px;overflow-wrap:anywhere}
tr.rollout{cursor:pointer}tr.rollout:hover{background:#eef4ff}tr.rollout.selected{background:#dbe8ff}
tr.failed td.status,.failed-mark{color:#b3261e;font-weight:600}tr.failed{background:#fff1f0}
.badge{display:inline-block;border-radius:3px;padding:0 5px;font-size:12px;background:#eef0f3}
.badge.err{background:#b3261e;color:#fff}.badge.retry{background:#e8a317;color:#fff}
.call{border:1px solid #dde1e7;border-radius:4px;margin:6px 0;padding:6px}.call.errored{border-color:#b3261e;
background:#fff6f5}.call.retry{border-left:4px solid #e8a317}pre{white-space:pre-wrap;word-break:break-word;
margin:2px 0;font-size:12px;background:#f6f7f9;padding:4px;border-radius:3px;max-height:260px;overflow:auto}
#search{width:100%;padding:5px;margin-bottom:6px;box-sizing:border-box}.muted{color:#6b7380}
#rollout-list{max-height:70vh;overflow:auto}svg text{font-size:11px}
"""

JS = r"""
"use strict";
const DATA = JSON.parse(document.getElementById("card-data").textContent);
const $ = (id) => document.getElementById(id);
function esc(v){return String(v===null||v===undefined?"":v).replace(/[&<>"']/g,
  (c)=>({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"}[c]));}
function fmt(v){if(v===null||v===undefined)return "—";if(typeof v==="number")return Number.isInteger(v)?String(v):
  v.toFixed(4);return typeof v==="object"?JSON.stringify(v):String(v);}
const FAILED=new Set(["infrastructure_failure","failed","cancelled","skipped"]);
function isFailed(r){return FAILED.has(r.status)||FAILED.has(r.node_status)||r.budget_exhausted;}
function counts(c){return c?Object.entries(c).map(([k,v])=>esc(k)+"="+esc(v)).join(" "):"";}
function header(){
  const run=DATA.run||{},b=DATA.banner||{};const cell=run.cell?Object.entries(run.cell).filter(([k])=>k!==
    "task_model").map(([k,v])=>k+"="+v).join(","):"";const used=(b.task_models||[]).join(", ");
  $("title").textContent="Rollout card · "+(run.method||"")+" · "+cell+(used?" · model "+used:"")+
    (b.simulated?" · SIMULATED":"")+(b.conformant===false?" · NON-CONFORMANT":"");
  $("subtitle").textContent=(DATA.card_id||"")+" · run "+(run.run_id||"")+" · status "+(run.status||"?")+
    (b.cell_task_model?" · grid label task_model="+b.cell_task_model+(used?" (reported model: "+used+")":""):"");
  const rows=(DATA.reported||[]).map((n)=>"<tr><td>"+esc(n.name)+"</td><td>"+esc(fmt(n.value))+"</td><td>"+
    Object.entries(n.arms||{}).map(([a,x])=>"<b>"+esc(a)+"</b> denominator="+esc(x.denominator)+" "+counts(x.counts))
      .join("<br>")+"</td><td class=muted>"+esc(n.rule_id)+"</td></tr>").join("");
  $("headline").innerHTML=rows?"<table><tr><th>number</th><th>value</th><th>failure counts</th><th>rule</th></tr>"+
    rows+"</table>":"<p class=muted>no reported numbers</p>";}
function phases(){
  $("phases").innerHTML="<table>"+(DATA.phases||[]).map((p)=>"<tr><td><b>"+esc(p.phase)+"</b><div class=muted>"+
    esc(p.at)+"</div></td><td>"+Object.entries(p.fields).filter(([k,v])=>typeof v!=="object"||v===null)
    .map(([k,v])=>esc(k)+"="+esc(fmt(v))).join(" · ")+"</td></tr>").join("")+"</table>";}
function rules(){
  $("rules").innerHTML=(DATA.rules||[]).map((r)=>{const d=r.drops||{};return "<div class=call><b>"+esc(r.rule_id)+
    "</b> <span class=badge>"+esc(r.kind)+"</span> status="+esc(r.status)+"<div class=muted>"+esc(r.description)+
    "</div><div>"+Object.entries(r.values||{}).map(([k,v])=>esc(k)+"="+esc(fmt(v))).join(" · ")+"</div>"+
    Object.entries(r.arms||{}).map(([a,x])=>"<div><b>"+esc(a)+"</b> denominator="+esc(x.denominator)+" "+
    counts(x.counts)+"</div>").join("")+"<details><summary>drops manifest</summary>"+
    (d.filters||[]).map((f)=>"<div>filter: "+esc(f.expr)+" — removed "+esc(f.rows_removed)+" ("+esc(f.reason)+
    ")</div>").join("")+"<div>collapses: "+esc((d.collapses||[]).join(", "))+"</div>"+
    (d.semantic_losses||[]).map((s)=>"<div>loss: "+esc(s.loss_class)+" — "+esc(s.reason)+"</div>").join("")+
    (d.reads||[]).map((x)=>"<div class=muted>reads "+esc(x.stream)+(x.namespace?"["+esc(x.namespace)+"]":"")+
    ": "+esc(x.fields.join(", "))+" ("+esc(x.rows.count)+" rows)</div>").join("")+"</details></div>";}).join("")||
    "<p class=muted>no recorded rules</p>";
  const s=DATA.release_scope||{},om=s.omissions||[];
  $("redactions").innerHTML="<div>release class <b>"+esc(s.class)+"</b></div>"+(om.length?"<table><tr><th>stream"+
    "</th><th>field</th><th>rows</th><th>reason</th></tr>"+om.map((o)=>"<tr><td>"+esc(o.stream)+"</td><td>"+
    esc(o.field_path)+(o.row_filter?" <span class=muted>("+esc(o.row_filter)+")</span>":"")+"</td><td>"+
    esc(o.rows_affected)+"</td><td>"+esc(o.reason_code)+": "+esc(o.reason)+"</td></tr>").join("")+"</table>":
    "<p class=muted>nothing removed</p>");}
function bundles(){
  $("bundles").innerHTML=(DATA.bundles||[]).map((b)=>"<details class=bundle><summary><b>"+esc(b.used_as.join(", "))+
    "</b> <span class=muted>"+esc(String(b.bundle_sha256).slice(0,16))+"…</span></summary>"+Object.entries(b.roles||{})
    .map(([role,text])=>"<div><b>"+esc(role)+"</b><pre>"+esc(typeof text==="string"?text:JSON.stringify(text))+
    "</pre></div>").join("")+"<div class=muted>demos: "+esc((b.demos||[]).length)+"</div></details>").join("")||
    "<p class=muted>no bundle records</p>";}
function list(){
  $("rollout-list").innerHTML="<table><thead><tr><th>phase</th><th>candidate</th><th>example</th><th>status</th>"+
    "<th>score</th><th>attempts</th></tr></thead><tbody>"+DATA.rollouts.map((r,i)=>"<tr class='rollout"+
    (isFailed(r)?" failed":"")+"' data-index="+i+" data-example='"+esc(r.example)+"' data-candidate='"+
    esc(r.candidate)+"'><td>"+esc(r.phase)+"</td><td class=candidate>"+esc(r.candidate)+"</td><td>"+esc(r.example)+
    "</td><td class=status>"+(isFailed(r)?"✖ ":"")+esc(r.status)+"</td><td class=score>"+esc(fmt(r.score))+
    "</td><td>"+esc(r.attempts)+(r.attempts>1?" <span class='badge retry'>retried</span>":"")+"</td></tr>")
    .join("")+"</tbody></table>";
  $("count").textContent=DATA.rollouts.length+" rollouts";
  $("rollout-list").addEventListener("click",(ev)=>{const tr=ev.target.closest("tr.rollout");
    if(tr)show(Number(tr.dataset.index),tr);});
  $("search").addEventListener("input",search);}
function graph(d){
  const workers=[...new Set(d.agents.map((a)=>a.worker||"?"))],turns={};const pos={};
  d.agents.forEach((a)=>{const w=workers.indexOf(a.worker||"?");turns[w]=(turns[w]||0)+1;
    pos[a.id]={x:70+w*130,y:30+(turns[w]-1)*46,a:a};});
  const H=40+46*Math.max(1,...Object.values(turns)),W=Math.max(260,60+130*workers.length);
  const edges=d.edges.filter((e)=>pos[e[0]]&&pos[e[1]]).map((e)=>{const a=pos[e[0]],b=pos[e[1]];
    const bend=Math.min(0.45*Math.hypot(b.x-a.x,b.y-a.y),90),mx=(a.x+b.x)/2,my=(a.y+b.y)/2+bend;
    return "<path class=read d='M"+a.x+","+a.y+" Q"+mx+","+my+" "+b.x+","+b.y+"' fill=none stroke=#8a94a6 "+
    "marker-end=url(#arrow)><title>"+esc(e[1])+" read "+esc(e[0])+"</title></path>";}).join("");
  const nodes=Object.values(pos).map((p)=>"<g class=agent data-node='"+esc(p.a.id)+"'><circle cx="+p.x+" cy="+p.y+
    " r=14 fill="+(p.a.status==="failed"?"#f2b8b5":"#cfe0ff")+" stroke=#2a62c9 /><text x="+(p.x-50)+" y="+(p.y+26)+
    ">"+esc(p.a.label)+"</text></g>").join("");
  return "<svg class=graph width="+W+" height="+(H+110)+"><defs><marker id=arrow viewBox='0 0 10 10' refX=24 refY=5 "+
    "markerWidth=6 markerHeight=6 orient=auto-start-reverse><path d='M0,0L10,5L0,10z' fill=#8a94a6 /></marker></defs>"+edges+
    nodes+"</svg>";}
function treatment(rule,r){const c=rule.config||{};if(r.phase!=="test"&&c.infrastructure)return "not in this rule";
  if(r.status==="infrastructure_failure")return c.infrastructure==="exclude_pair"?"excluded (pair dropped)":
    "counted as 0";if(r.budget_exhausted)return c.budget_exhausted==="exclude"?"excluded":"counted as 0";
  return "score "+fmt(r.score);}
function show(i,tr){
  for(const el of document.querySelectorAll("tr.rollout.selected"))el.classList.remove("selected");tr.classList.add("selected");
  const r=DATA.rollouts[i],d=DATA.details[r.id]||{agents:[],edges:[],calls:[]};const seen={};
  const calls=d.calls.map((c)=>{const retry=c.attempt.endsWith("a1")?"":" retry";seen[c.attempt]=1;
    return "<div class='call"+(c.error?" errored":"")+retry+"'><b>"+esc(c.worker)+"</b> <span class=muted>"+
    esc(c.attempt)+" · "+esc(c.id)+(c.latency!=null?" · "+fmt(c.latency)+" s":"")+"</span>"+(retry?
    " <span class='badge retry'>retry</span>":"")+(c.error?" <span class='badge err'>error</span><pre>"+
    esc(c.error)+"</pre>":"")+"<details><summary>messages ("+(Array.isArray(c.messages)?c.messages.length:"?")+
    ")</summary>"+(Array.isArray(c.messages)?c.messages.map((m)=>"<div><b>"+esc(m.role)+"</b><pre>"+
    esc(typeof m.content==="string"?m.content:JSON.stringify(m.content))+"</pre></div>").join(""):"<pre>"+
    esc(JSON.stringify(c.messages))+"</pre>")+"</details><div>response"+(c.finish_reason?" <span class=muted>("+
    esc(c.finish_reason)+")</span>":"")+"<pre class=response>"+esc(typeof c.response==="string"?c.response:
    JSON.stringify(c.response))+"</pre></div></div>";}).join("");
  $("detail").innerHTML="<h2>"+esc(r.example)+" <span class=muted>"+esc(r.phase)+"</span></h2>"+(r.candidate?
    "<div id=detail-candidate>candidate <b>"+esc(r.candidate)+"</b> <span class=muted>"+esc(String(r.bundle)
    .slice(0,12))+"</span></div>":"")+"<div>status <b class='"+
    (isFailed(r)?"failed-mark":"")+"' id=detail-status>"+esc(r.status)+"</b> · node "+esc(r.node_status)+
    " · score <b id=detail-score>"+esc(fmt(r.score))+"</b> · attempts "+esc(r.attempts)+"</div>"+
    (r.error?"<pre class=failed-mark>"+esc(r.error)+"</pre>":"")+(r.feedback?"<div class=muted>"+esc(r.feedback)+
    "</div>":"")+"<h2>scores under each recorded rule</h2><table>"+(DATA.rules||[]).map((x)=>"<tr><td>"+
    esc(x.rule_id)+"</td><td class=rule-score>"+esc(treatment(x,r))+"</td></tr>").join("")+"</table><h2>agents ("+
    d.agents.length+") — who read whom</h2>"+graph(d)+"<h2>calls ("+d.calls.length+", attempts "+
    Object.keys(seen).length+")</h2>"+calls;}
banner();header();phases();candidates();curve();diff();rules();bundles();list();calls();
"""


def page(data: dict[str, Any]) -> str:
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    payload = payload.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return ("<!doctype html>\n<html lang=en><head><meta charset=utf-8><meta name=viewport "
            "content='width=device-width,initial-scale=1'><meta http-equiv=Content-Security-Policy content=\"default-src "
            "'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
            f"<title>Rollout card</title><style>{CSS}{OPT_CSS}</style></head><body><header><h1 id=title>Rollout card</h1>"
            "<div class=sub id=subtitle></div></header><div id=banner role=alert></div><main><div><section><h2>Headline</h2><div id=headline></div>"
            "</section><section><h2>Rollouts <span class=muted id=count></span></h2><input id=search type=search "
            "placeholder='search example ids, prompts and responses'><div id=rollout-list></div></section><section><h2>Phases</h2>"
            "<div id=phases></div></section><section><h2>Learning curve</h2><div id=curve></div></section><section><h2>Candidates</h2>"
            "<div id=candidates></div></section><section>"
            "<h2>Prompt bundles</h2><div id=bundles></div></section></div><div>"
            "<section id=detail><p class=muted>Open a rollout to see its agents, calls and scores.</p></section>"
            "<section><h2>Prompt diff: seed vs deployed</h2><div id=diff></div></section><section><h2>Optimizer calls "
            "<span class=muted id=calls-count></span></h2><div id=calls-summary></div><div id=calls-list></div>"
            "<div id=call-detail></div></section><section><h2>Reporting rules and drops</h2><div id=rules></div></section><section><h2>Redactions"
            "</h2><div id=redactions></div></section></div></main>"
            f"<script id=card-data type=application/json>{payload}</script><script>{JS}{OPT_JS}</script></body></html>\n")
