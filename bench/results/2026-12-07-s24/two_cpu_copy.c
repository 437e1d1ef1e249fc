#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <emmintrin.h>
#include <stdatomic.h>
#include <sys/mman.h>
static size_t B;
static atomic_int go, done;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static double cpu(){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void flush(char*p,size_t n){for(size_t i=0;i<n;i+=64)_mm_clflush(p+i);_mm_mfence();}
static char* mk(size_t n){char*p=mmap(0,n,3,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);madvise(p,n,MADV_HUGEPAGE);memset(p,1,n);return p;}
typedef struct{char*s,*d;int cpu;int red;double t[5];}th_t;
static void red(float*d,const float*a,size_t n){for(size_t i=0;i<n;i++)d[i]+=a[i];}
static void *run(void*a){th_t*t=a;cpu_set_t c;CPU_ZERO(&c);CPU_SET(t->cpu,&c);sched_setaffinity(0,sizeof c,&c);
 for(int k=0;k<5;k++){flush(t->s,B);flush(t->d,B);atomic_fetch_add(&done,1);while(atomic_load(&go)<=k);
  double t0=cpu(); if(t->red) red((float*)t->d,(float*)t->s,B/4); else memcpy(t->d,t->s,B); t->t[k]=cpu()-t0; atomic_fetch_add(&done,1);} return 0;}
int main(int argc,char**argv){B=(size_t)atoi(argv[1])<<20;int rd=argc>2;
 th_t t[2]; for(int i=0;i<2;i++){t[i].s=mk(B);t[i].d=mk(B);t[i].cpu=i;t[i].red=rd;}
 /* alone */
 double best=1e9; for(int k=0;k<5;k++){flush(t[0].s,B);flush(t[0].d,B);double t0=cpu(); if(rd) red((float*)t[0].d,(float*)t[0].s,B/4); else memcpy(t[0].d,t[0].s,B); double s=cpu()-t0; if(s<best)best=s;}
 printf("alone %.1f GB/s\n",B/best/1e9);
 pthread_t p; pthread_create(&p,0,run,&t[1]);
 cpu_set_t c;CPU_ZERO(&c);CPU_SET(0,&c);sched_setaffinity(0,sizeof c,&c);
 for(int k=0;k<5;k++){flush(t[0].s,B);flush(t[0].d,B);while(atomic_load(&done)<2*k+1);atomic_store(&go,k+1);
  double t0=cpu(); if(rd) red((float*)t[0].d,(float*)t[0].s,B/4); else memcpy(t[0].d,t[0].s,B); t[0].t[k]=cpu()-t0; while(atomic_load(&done)<2*k+2);}
 pthread_join(p,0);
 for(int k=0;k<5;k++){double s=t[0].t[k]>t[1].t[k]?t[0].t[k]:t[1].t[k];printf("pair pass %d: %.1f %.1f -> %.1f GB/s per thread\n",k,B/t[0].t[k]/1e9,B/t[1].t[k]/1e9,B/s/1e9);}
}
