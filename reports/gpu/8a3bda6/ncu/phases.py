import csv,sys
def f(x):
    try: return float(x)
    except: return 0.0
rows=list(csv.reader(open(sys.argv[1])))
cur=None; hdr=None; out=[]
for r in rows:
    if not r: continue
    if r[0]=="File Path": cur=r[1]; continue
    if r[0]=="Function Name": continue
    if r[0]=="Line No": hdr=r; continue
    if hdr and cur and r[0]:
        d=dict(zip(hdr,r)); d['file']=cur.split('/')[-1]; out.append(d)
stall=[h for h in hdr if h.startswith('stall_') and 'Not Issu' not in h]
tot=sum(f(d['Warp Stall Sampling (All Samples)']) for d in out)
print('total samples (cuda lines)',tot)
ranges=[tuple(x.split(':')) for x in sys.argv[2:]]
acc={}
for d in out:
    s=f(d['Warp Stall Sampling (All Samples)'])
    key=d['file']
    if d['file']=='tc.cu':
        ln=int(d['Line No'])
        key='tc.cu:other'
        for name,a,b in ranges:
            if int(a)<=ln<=int(b): key=name
    acc.setdefault(key,[0,{}])
    acc[key][0]+=s
    for h in stall: acc[key][1][h]=acc[key][1].get(h,0)+f(d[h])
for k,(s,st) in sorted(acc.items(),key=lambda x:-x[1][0]):
    top=sorted(((v,h[6:]) for h,v in st.items()),reverse=True)[:4]
    print(f"{100*s/tot:5.1f}% {k} {[(h,round(100*v/max(s,1))) for v,h in top]}")
