/// The projector page: one HTML document with its style and script inline, compiled into the binary
/// (no file at run time, no CDN, no web font). It shows the join code, the question and its results
/// from the snapshots the server sends over `/events` (server-sent events); the browser's
/// `EventSource` reconnects by itself when the tally restarts.
///
/// Stable hooks for tests and scripts: `#joincode`, `#question`, `#title`, `#state`, `#voters`, `#pending`,
/// `#results` (`data-kind`: `bars`, `rounds` or `histogram`), `#hidden`, and one `.bar` per option with
/// `data-option` and `data-count` (a ranked question: the last round's, the winner's or the tied ones'
/// with `data-winner`). Multi-select: `#combinations` with `.combination[data-answer][data-count]`.
/// Ranked: `#outcome` (`#leader`) and the table `#rounds`, one `tr[data-round]` per round whose cells
/// carry `data-option`/`data-count` (options still in the race), `data-exhausted`, `data-active` and
/// `data-eliminated`. Numeric: one `.bar` per bin with `data-bin` (its label) and `data-count`, and
/// `#median`, `#lowerQuartile`, `#upperQuartile`, `#minimum`, `#maximum` in the question's units.
/// `#download`: the "download SVG" link to `chart.svg` (hidden with the counts).
/// `body` carries `data-state` (`open`/`closed`), `data-hidden` and `data-connected`.
///
/// Text from the poll (titles, option texts) is set with `textContent` only, never parsed as HTML.
/// Colours: the Okabe–Ito palette, distinguishable with every common colour-vision deficiency, on a
/// black background (white text, contrast above 15:1).
public enum ProjectorPage {
    /// The page's style sheet (the server names its hash in the Content-Security-Policy).
    public static let style = #"""
    :root{--bg:#000;--fg:#fff;--dim:#c8c8c8;--track:#262626;color-scheme:dark}
    *{box-sizing:border-box}
    html,body{margin:0;height:100%;background:var(--bg);color:var(--fg);
      font-family:"DejaVu Sans","Liberation Sans",Arial,Helvetica,sans-serif}
    body{display:flex;flex-direction:column;padding:2.5vh 3vw;gap:2vh;font-size:clamp(18px,2.2vw,44px)}
    header{display:flex;justify-content:space-between;align-items:flex-end;gap:2vw;flex-wrap:wrap}
    #joincode{font-family:"DejaVu Sans Mono","Liberation Mono",monospace;font-weight:700;
      font-size:clamp(30px,6.2vw,124px);letter-spacing:.04em;line-height:1;white-space:nowrap}
    #howto{color:var(--dim);font-size:.85em;margin-top:.6vh;overflow-wrap:anywhere}
    #status{text-align:right;font-size:.9em;color:var(--dim)}
    #download{display:inline-block;margin-top:2vh;font-size:.7em;color:var(--dim)}
    #download[hidden]{display:none}
    #state{font-weight:700;color:var(--fg);text-transform:uppercase}
    body[data-state=open] #state{color:#56b4e9}
    #voters{font-weight:700;color:var(--fg)}
    #link[data-ok=false]{color:#e69f00}
    h1{margin:0;font-size:1.5em;line-height:1.2}
    #question{color:var(--dim);font-weight:400;margin-right:.5em}
    main{flex:1;display:flex;flex-direction:column;justify-content:center;min-height:0}
    #results{display:grid;grid-template-columns:minmax(3ch,auto) 1fr minmax(7ch,auto);gap:1.6vh 1.2vw}
    #results>*{grid-column:1/-1}
    .row{display:grid;grid-template-columns:subgrid;align-items:center}
    .label{font-weight:700;font-size:1.3em}
    .label small{display:block;font-weight:400;font-size:.62em;color:var(--dim);max-width:34vw;overflow-wrap:anywhere}
    .track{background:var(--track);height:clamp(26px,6vh,84px);border-radius:6px;overflow:hidden}
    .bar{height:100%;min-width:4px;border-radius:6px;transition:width .3s}
    .count{font-weight:700;font-size:1.3em;text-align:right;font-variant-numeric:tabular-nums}
    .count small{display:block;font-weight:400;font-size:.6em;color:var(--dim)}
    #hidden{font-size:2em;text-align:center;color:var(--dim);border:4px dashed #555;padding:6vh 2vw;border-radius:12px}
    #empty{color:var(--dim);text-align:center}
    .row.lead .label{color:#56b4e9}
    .line{color:var(--dim);font-size:.9em}
    .line b{color:var(--fg)}
    #outcome{font-size:1.2em}
    #rounds{border-collapse:collapse;font-size:.8em;font-variant-numeric:tabular-nums;margin-top:1vh}
    #rounds th,#rounds td{padding:.2em .7em;text-align:right;border-bottom:1px solid #444}
    #rounds th{color:var(--dim);font-weight:400}
    #rounds td.out{color:#777}
    @media (max-width:700px),(orientation:portrait){
      body{font-size:18px;padding:16px;gap:14px}
      header{flex-direction:column;align-items:flex-start}
      #status{text-align:left}
      #joincode{font-size:clamp(24px,8.4vw,60px)}
      .row{grid-template-columns:1fr auto;grid-template-areas:"l c" "t t";row-gap:6px}
      .label{grid-area:l}.count{grid-area:c}.track{grid-area:t;height:28px}
      .label small{max-width:none}
      #rounds{font-size:.85em;display:block;overflow-x:auto;max-width:100%}#rounds th,#rounds td{padding:.2em .35em}
      #hidden{font-size:1.4em}
    }
    """#

    /// The page's script.
    public static let script = #"""
    "use strict";
    const COLOURS=["#E69F00","#56B4E9","#009E73","#F0E442","#0072B2","#D55E00","#CC79A7","#BBBBBB"];
    const token=new URLSearchParams(location.search).get("token");
    const query=token?"?token="+encodeURIComponent(token):"";
    const $=id=>document.getElementById(id);
    function el(tag,cls,text){const e=document.createElement(tag);if(cls)e.className=cls;if(text!=null)e.textContent=String(text);return e;}
    // One row per entry: label, bar, count and share. `width`: the count a full bar stands for;
    // `base`: the count the share is of; `hook`: the bar's data attributes.
    function bars(list,width,base,hook){
      const box=$("results");
      list.forEach((b,i)=>{
        const row=el("div","row");
        const label=el("div","label",b.mark?b.label+" ✓":b.label);
        if(b.text){label.appendChild(el("small",null,b.text));}
        const track=el("div","track");
        const bar=el("div","bar");
        hook(bar,b);bar.dataset.count=String(b.count);
        bar.style.background=b.colour||COLOURS[i%COLOURS.length];
        bar.style.width=(width>0?100*b.count/width:0)+"%";
        track.appendChild(bar);
        const count=el("div","count",b.count);
        count.appendChild(el("small",null,base>0?Math.round(100*b.count/base)+"%":"–"));
        row.append(label,track,count);box.appendChild(row);
        if(b.mark){row.classList.add("lead");bar.dataset.winner="true";}
      });
    }
    const byOption=(bar,b)=>{bar.dataset.option=b.option;};
    function line(id,parts){
      const p=el("div","line");p.id=id;
      parts.forEach(([text,pid])=>{const e=el(pid?"b":"span",null,text);if(pid)e.id=pid;p.appendChild(e);});
      $("results").appendChild(p);return p;
    }
    function rounds(r,options){
      const last=(r.rounds||[])[r.rounds.length-1];
      const tied=r.tied||[];
      const list=r.bars.map(b=>({label:b.option,text:b.text,count:b.count,option:b.option,
        colour:COLOURS[options.indexOf(b.option)%COLOURS.length],mark:b.option===r.winner||tied.includes(b.option)}));
      if(last)line("outcome",[[r.outcome==="winner"?"Winner ":r.outcome==="tie"?"Tie ":"No winner",null],
        [r.outcome==="winner"?r.winner:tied.join(", "),"leader"],
        [" · round "+last.round+" of "+r.rounds.length+" · "+last.active+" active ballots",null]]);
      bars(list,last?last.active:0,last?last.active:0,byOption);
      if(!last)return;
      const table=el("table");table.id="rounds";
      const head=el("tr");
      ["Round"].concat(options,["Exhausted","Active","Out"]).forEach(h=>head.appendChild(el("th",null,h)));
      table.appendChild(head);
      r.rounds.forEach(x=>{
        const tr=el("tr");tr.dataset.round=String(x.round);
        tr.appendChild(el("td",null,x.round));
        options.forEach(o=>{
          const v=x.votes.find(b=>b.option===o);
          const td=el("td",v?null:"out",v?v.count:"–");
          if(v){td.dataset.option=o;td.dataset.count=String(v.count);}
          tr.appendChild(td);
        });
        const ex=el("td",null,x.exhausted);ex.dataset.exhausted=String(x.exhausted);
        const ac=el("td",null,x.active);ac.dataset.active=String(x.active);
        const out=el("td",null,x.eliminated||"");if(x.eliminated)out.dataset.eliminated=x.eliminated;
        tr.append(ex,ac,out);table.appendChild(tr);
      });
      $("results").appendChild(table);
    }
    function histogram(r){
      const list=(r.bins||[]).map(b=>({label:b.label,count:b.count}));
      const most=list.reduce((a,b)=>Math.max(a,b.count),0);
      if(r.median!=null)line("stats",[["Median ",null],[r.median,"median"],[" · quartiles ",null],
        [r.lowerQuartile,"lowerQuartile"],[" – ",null],[r.upperQuartile,"upperQuartile"],
        [" · range ",null],[r.minimum,"minimum"],[" – ",null],[r.maximum,"maximum"]]);
      bars(list,most,r.ballots||0,(bar,b)=>{bar.dataset.bin=b.label;});
    }
    function render(s){
      document.body.dataset.state=s.state;
      document.body.dataset.hidden=String(s.hidden);
      $("joincode").textContent=s.joinCode;
      $("howto").textContent=s.howToVote;
      $("question").textContent="Question "+s.question.number;
      $("title").textContent=s.question.title||"";
      $("state").textContent=s.state;
      $("voters").textContent=String(s.voters);
      $("pending").textContent=s.notYetShown?" · "+s.notYetShown+(s.notYetShown===1?" vote":" votes")+" not yet shown":"";
      const box=$("results");box.replaceChildren();
      $("hidden").hidden=!s.hidden;
      $("download").hidden=s.hidden||!s.results;
      $("download").href="chart.svg"+query;
      if(s.hidden||!s.results){box.dataset.kind="";return;}
      box.dataset.kind=s.results.kind;
      const r=s.results;
      switch(r.kind){
        case "rounds":rounds(r,s.question.options.map(o=>o.label));break;
        case "histogram":histogram(r);break;
        case "bars":
        default:{
          const list=(r.bars||[]).map(b=>({label:b.option,text:b.text,count:b.count,option:b.option}));
          const sum=list.reduce((a,b)=>a+b.count,0);
          // Multi-select: share of the voters who selected each option; otherwise of the answers.
          const base=s.question.kind==="multiSelect"?s.voters:sum;
          bars(list,base,base,byOption);
          if(r.combinations&&r.combinations.length){
            const p=line("combinations",[["Top combinations: ",null]]);
            r.combinations.forEach((c,i)=>{
              const e=el("span","combination",(i?" · ":"")+c.answer+" "+c.count);
              e.dataset.answer=c.answer;e.dataset.count=String(c.count);p.appendChild(e);
            });
          }
        }
      }
      if(!box.querySelector(".bar"))box.appendChild(el("div",null,"No answers yet")).id="empty";
    }
    let source=null;
    function connect(){
      source=new EventSource("/events"+query);
      source.addEventListener("snapshot",e=>{
        document.body.dataset.connected="true";$("link").dataset.ok="true";$("link").textContent="live";
        render(JSON.parse(e.data));
      });
      source.onerror=()=>{
        document.body.dataset.connected="false";$("link").dataset.ok="false";$("link").textContent="reconnecting…";
        // The browser retries a dropped stream itself; one it gave up on is opened again.
        if(source.readyState===EventSource.CLOSED){source.close();setTimeout(connect,2000);}
      };
    }
    connect();
    """#

    /// The whole document.
    public static let html = """
    <!DOCTYPE html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width,initial-scale=1">
    <meta name="referrer" content="no-referrer">
    <title>Clicker results</title>
    <style>\(style)</style>
    </head>
    <body data-state="" data-hidden="false" data-connected="false">
    <header>
    <div><div id="joincode">…</div><div id="howto"></div></div>
    <div id="status"><span id="state"></span> · <span id="voters">0</span> voters<span id="pending"></span> · <span id="link" data-ok="false">connecting…</span></div>
    </header>
    <h1><span id="question"></span><span id="title"></span></h1>
    <main>
    <div id="hidden" hidden>Results hidden</div>
    <div id="results" data-kind=""></div>
    <a id="download" href="chart.svg" download="clicker-results.svg" hidden>Download SVG</a>
    </main>
    <script>\(script)</script>
    </body>
    </html>

    """

    /// The page as UTF-8, what the server sends.
    public static let bytes: [UInt8] = Array(html.utf8)
}
