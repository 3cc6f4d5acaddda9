"""The viewer page's optimization story (CSS and JavaScript, inlined by `view_page`): the simulated /
non-conformant banner, the candidate list, the learning curve with labelled axes, the seed-vs-deployed prompt diff
and the optimizer's own calls (reflection, judge, probe) with their failures. Card text goes in only through
`esc`; a call's messages are rendered when it is opened."""

from __future__ import annotations

OPT_CSS = """
.banner{background:#fff4e5;border:2px solid #e8a317;border-radius:6px;padding:8px 12px;margin:12px 12px 0}
.banner.simulated{background:#fde8e7;border-color:#b3261e}.banner b{font-size:15px}
table.diff td{font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap;width:50%}
table.diff td.del{background:#fde8e7}table.diff td.ins{background:#e6f4ea}table.diff td.gap{background:#f6f7f9}
tr.opt-call{cursor:pointer}tr.opt-call:hover{background:#eef4ff}tr.opt-call.failed{background:#fff1f0}
#calls-list{max-height:320px;overflow:auto}svg .axis-label{font-size:12px;fill:#1d2330}svg .tick{fill:#6b7380}
"""

OPT_JS = r"""
function banner(){
  const b=DATA.banner||{};if(!b.show){$("banner").hidden=true;return;}
  const el=$("banner");el.className="banner"+(b.simulated?" simulated":"");
  const what=[b.simulated?"Simulated run":"",b.conformant===true?"":b.conformant===false?"Not protocol-conformant":
    "Protocol conformance not recorded"].filter(Boolean).join(" · ");
  el.innerHTML="<b id=banner-title>"+esc(what)+"</b><div id=banner-models>models the endpoints reported: "+
    ((b.reports||[]).map((r)=>"<span class=badge>"+esc(r.role)+" "+esc(r.index)+": <b>"+esc(r.reported_model)+
    "</b> (requested "+esc(r.model_id)+(r.simulated?", simulated":"")+")</span>").join(" ")||
    "<span class=muted>none recorded</span>")+"</div>"+(b.reasons&&b.reasons.length?"<div>nonconformance: "+
    esc(b.reasons.join(", "))+"</div>":"")+"<div class=muted>endpoint kind "+esc(b.endpoint_kind)+
    (b.cell_task_model?" · the cell's task_model="+esc(b.cell_task_model)+" is the grid label, not the model used":
    "")+"</div>";}
function candidates(){
  const cs=DATA.candidates||[];if(!cs.length){$("candidates").innerHTML="<p class=muted>no candidates</p>";return;}
  $("candidates").innerHTML="<table id=candidate-table><tr><th>candidate</th><th>proposed by</th><th>optimize "+
    "rollouts (train)</th><th>validation</th><th>accepted</th></tr>"+cs.map((c)=>{const o=c.optimize,v=c.validation;
    return "<tr class=candidate data-name='"+esc(c.name)+"'><td><b>"+esc(c.name)+"</b> <span class=muted>"+
    esc(c.sha.slice(0,12))+"</span>"+(c.recorded?"":"<div class=muted>text not in the card</div>")+"</td><td>"+
    esc(c.name==="seed"?"seed bundle":c.proposer||"—")+(c.reflections.length?"<div class=muted>reflection: "+
    esc([...new Set(c.reflections.map((r)=>r.purpose))].join(", "))+" ("+c.reflections.length+" call"+
    (c.reflections.length>1?"s":"")+")</div>":"")+(c.metadata&&Object.keys(c.metadata).length?"<div class=muted>"+
    Object.entries(c.metadata).map(([k,x])=>esc(k)+"="+esc(fmt(x))).join(" · ")+"</div>":"")+"</td><td>"+
    (o.n?esc(o.n)+" rollouts, mean <b>"+esc(fmt(o.mean))+"</b> over "+esc(o.scored)+(o.failed?
    " <span class='badge err'>"+esc(o.failed)+" unscored</span>":"")+"<div class=muted>at rollouts charged "+
    esc(o.first_x)+"–"+esc(o.last_x)+"</div>":"<span class=muted>none</span>")+"</td><td>"+(v.n?"mean "+
    esc(fmt(v.mean))+" over "+esc(v.n-v.failed)+" of "+esc(v.n)+(v.failed?" <span class='badge err'>"+esc(v.failed)+
    " failed</span>":""):"<span class=muted>not validated</span>")+(v.selection_score!==null&&v.selection_score!==
    undefined?"<div>selection score <b>"+esc(fmt(v.selection_score))+"</b></div>":"")+"</td><td class=accepted>"+
    esc(c.accepted==="not kept"?"not kept":c.accepted==="seed"?"seed":"yes: "+c.used_as.join(", "))+"</td></tr>";})
    .join("")+"</table><p class=muted>Not in the card: each candidate's parent, its minibatch ids and scores, and "+
    "the per-iteration accept decisions (the optimizer's records stay in the job directory).</p>";}
function curve(){
  const c=DATA.curve||{},pts=c.points||[],line=c.line||[];
  if(!pts.length&&!line.length){$("curve").innerHTML="<p class=muted>no optimize-phase rollouts</p>";return;}
  const W=460,H=230,L=48,R=14,T=14,B=42,mx=Math.max(c.x_max||0,1);
  const ys=pts.map((p)=>p.y).concat(line.map((p)=>p[1])),y0=Math.min(0,...ys),y1=Math.max(1,...ys);
  const X=(x)=>L+(W-L-R)*x/mx,Y=(y)=>H-B-(H-T-B)*(y-y0)/((y1-y0)||1);let svg="";
  for(let i=0;i<=4;i++){const xv=Math.round(mx*i/4),yv=y0+(y1-y0)*i/4;
    svg+="<line x1="+X(xv)+" y1="+(H-B)+" x2="+X(xv)+" y2="+(H-B+4)+" stroke=#999 /><text class='tick x-tick' x="+
      (X(xv)-6)+" y="+(H-B+16)+">"+xv+"</text><line x1="+(L-4)+" y1="+Y(yv)+" x2="+(W-R)+" y2="+Y(yv)+
      " stroke=#eef0f3 /><text class='tick y-tick' x="+(L-34)+" y="+(Y(yv)+4)+">"+yv.toFixed(2)+"</text>";}
  svg+="<line x1="+L+" y1="+(H-B)+" x2="+(W-R)+" y2="+(H-B)+" stroke=#999 /><line x1="+L+" y1="+T+" x2="+L+
    " y2="+(H-B)+" stroke=#999 />";
  if(line.length)svg+="<path class=incumbent d='"+line.map((p,i)=>(i?"L":"M")+X(p[0]).toFixed(1)+","+
    Y(p[1]).toFixed(1)).join("")+"' fill=none stroke=#2a62c9 stroke-width=2><title>"+esc(c.line_label)+
    "</title></path>";
  svg+=pts.map((p)=>"<circle class=candidate cx="+X(p.x).toFixed(1)+" cy="+Y(p.y).toFixed(1)+
    " r=4 fill=#e8a317><title>"+esc(p.name)+" ("+esc(p.bundle)+"): mean "+fmt(p.y)+" over "+p.n+
    " rollouts</title></circle>").join("");
  svg+="<text class='axis-label x-label' x="+(L+(W-L-R)/2-50)+" y="+(H-6)+">rollouts charged</text><text "+
    "class='axis-label y-label' transform='translate(12,"+(H-B)+") rotate(-90)'>score (optimize mean)</text>";
  $("curve").innerHTML="<svg width="+W+" height="+H+">"+svg+"</svg><div class=muted>line: "+esc(c.line_label)+
    " · dots: each candidate's mean over its scored optimize rollouts, at its last one</div>";}
function diff(){
  const d=DATA.diff;if(!d){$("diff").innerHTML="<p class=muted>no seed and deployed bundle records</p>";return;}
  if(d.same){$("diff").innerHTML="<p>The deployed bundle is the seed (no prompt changed).</p>";return;}
  $("diff").innerHTML=d.roles.map((r)=>"<details class=diff-role"+(r.changed?" open":"")+"><summary><b>"+
    esc(r.role)+"</b> "+(r.changed?"<span class='badge retry'>changed</span>":"<span class=muted>unchanged"+
    "</span>")+"</summary><table class=diff><tr><th>seed "+esc(String(d.seed).slice(0,12))+"</th><th>deployed "+
    esc(String(d.deployed).slice(0,12))+"</th></tr>"+r.rows.map((x)=>{const eq=x[0]==="equal";return "<tr><td "+
    "class="+(x[1]===null?"gap":eq?"eq":"del")+">"+esc(x[1])+"</td><td class="+(x[2]===null?"gap":eq?"eq":"ins")+
    ">"+esc(x[2])+"</td></tr>";}).join("")+"</table></details>").join("")+(d.demos[0]||d.demos[1]?
    "<div class=muted>demos: seed "+esc(d.demos[0])+", deployed "+esc(d.demos[1])+"</div>":"");}
function callBody(c){
  return (c.error?"<pre class=failed-mark>"+esc(c.error)+"</pre>":"")+"<details><summary>messages ("+
    (Array.isArray(c.messages)?c.messages.length:"?")+")</summary>"+(Array.isArray(c.messages)?c.messages.map((m)=>
    "<div><b>"+esc(m.role)+"</b><pre>"+esc(typeof m.content==="string"?m.content:JSON.stringify(m.content))+
    "</pre></div>").join(""):"<pre>"+esc(JSON.stringify(c.messages))+"</pre>")+"</details><div>response"+
    (c.finish_reason?" <span class=muted>("+esc(c.finish_reason)+")</span>":"")+"<pre class=response>"+
    esc(typeof c.response==="string"?c.response:JSON.stringify(c.response))+"</pre></div>";}
function calls(){
  const cs=DATA.calls||[],s=DATA.call_summary||{};
  $("calls-summary").innerHTML=Object.keys(s).length?Object.entries(s).map(([k,v])=>"<span class=badge>"+esc(k)+
    " "+esc(v.calls)+"</span>"+(v.failed?" <span class='badge err'>"+esc(v.failed)+" failed</span>":"")).join(" "):
    "<span class=muted>no reflection, judge or probe calls</span>";
  if(!cs.length)return;
  $("calls-list").innerHTML="<table><thead><tr><th>component</th><th>purpose</th><th>key</th><th>model</th>"+
    "<th>status</th></tr></thead><tbody>"+cs.map((c,i)=>"<tr class='opt-call"+(c.error?" failed":"")+
    "' data-index="+i+" data-component='"+esc(c.component)+"'><td>"+esc(c.component)+"</td><td>"+esc(c.purpose)+
    "</td><td class=muted>"+esc(c.key)+"</td><td>"+esc(c.model)+"</td><td class=status>"+(c.error?
    "✖ failed":"ok")+(c.latency!=null?" <span class=muted>"+fmt(c.latency)+" s</span>":"")+"</td></tr>").join("")+
    "</tbody></table>";
  $("calls-list").addEventListener("click",(ev)=>{const tr=ev.target.closest("tr.opt-call");if(!tr)return;
    const c=cs[Number(tr.dataset.index)];$("call-detail").innerHTML="<div class='call"+(c.error?" errored":"")+
      "'><b>"+esc(c.component)+"</b> "+esc(c.purpose)+" <span class=muted>"+esc(c.id)+" · "+esc(c.node)+
      "</span>"+callBody(c)+"</div>";});}
function callText(c){let s="";if(Array.isArray(c.messages))for(const m of c.messages)s+="\n"+(typeof m.content===
  "string"?m.content:JSON.stringify(m.content));return s+"\n"+(typeof c.response==="string"?c.response:
  JSON.stringify(c.response))+"\n"+(c.error||"");}
let HAY=null,CALLHAY=null;
function haystacks(){if(!HAY){HAY=DATA.rollouts.map((r)=>{const d=DATA.details[r.id];let s=String(r.example)+
  "\n"+(r.error||"")+"\n"+(r.feedback||"");if(d)for(const c of d.calls)s+=callText(c);return s.toLowerCase();});
  CALLHAY=(DATA.calls||[]).map((c)=>(String(c.component)+" "+String(c.purpose)+" "+String(c.key)+callText(c))
  .toLowerCase());}return [HAY,CALLHAY];}
function search(){const q=$("search").value.trim().toLowerCase(),[hay,chay]=haystacks();let n=0,m=0;
  for(const tr of document.querySelectorAll("tr.rollout")){const hit=!q||hay[Number(tr.dataset.index)].includes(q);
    tr.hidden=!hit;if(hit)n++;}
  for(const tr of document.querySelectorAll("tr.opt-call")){const hit=!q||chay[Number(tr.dataset.index)]
    .includes(q);tr.hidden=!hit;if(hit)m++;}
  $("count").textContent=q?n+" of "+DATA.rollouts.length+" rollouts":DATA.rollouts.length+" rollouts";
  $("calls-count").textContent=q?m+" of "+(DATA.calls||[]).length+" calls":(DATA.calls||[]).length+" calls";}
"""
