import csv,io,collections,sys
def load(f):
    lines=open(f).read().splitlines()
    i=next(k for k,l in enumerate(lines) if l.startswith('"ID"'))
    by=collections.OrderedDict()
    for r in csv.DictReader(io.StringIO('\n'.join(lines[i:]))):
        d=by.setdefault((r['ID'],r['Kernel Name']),{}); k=r['Metric Name']; d[k if r['Metric Unit']!='byte/s' else k+' bytes']=r['Metric Value']
    return by
num=lambda s: float(s.replace(',',''))
for f in sys.argv[1:]:
    seen=set()
    for (i,name),m in load(f).items():
        k=name.split('(')[0].replace('void (anonymous namespace)::','').replace('void unnamed>::','')
        if k in seen: continue
        seen.add(k)
        t=num(m['Duration'])*1e-9
        rd,wr=num(m['dram__bytes_read.sum']),num(m['dram__bytes_write.sum'])
        tf=num(m['sm__inst_executed_pipe_tensor_op_hmma.sum'])*4096
        ff=num(m['smsp__sass_thread_inst_executed_op_ffma_pred_on.sum'])*2
        print(f"| {k} | {t*1e6:.0f} us | {rd/1e6:.0f} + {wr/1e6:.0f} MB | {(rd+wr)/t/1e12:.2f} TB/s ({(rd+wr)/t/3.35e12*100:.0f}%) | {tf/1e9:.1f} G, {tf/t/1e12:.0f} TFLOP/s ({tf/t/989e12*100:.1f}%) | {ff/t/1e12:.2f} TFLOP/s ({ff/t/67e12*100:.1f}%) | {m['Achieved Occupancy']}% / {m['Theoretical Occupancy']}%, {m['Registers Per Thread']} regs, {num(m['Dynamic Shared Memory Per Block'])/1024:.0f} KB smem, grid {m['Grid Size']} | SM {m['Compute (SM) Throughput']}%, memory {m['Memory Throughput']}%, IPC {m['Executed Ipc Active']} |")
