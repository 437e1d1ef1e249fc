#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static char* buf(size_t n,int huge){char*p=mmap(0,n,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); if(huge)madvise(p,n,MADV_HUGEPAGE); else madvise(p,n,MADV_NOHUGEPAGE); memset(p,1,n); return p;}
static double rd(char*d,char*s,size_t n){struct iovec l={d,n},r={s,n};double t=now();if(process_vm_readv(getpid(),&l,1,&r,1,0)!=(ssize_t)n)perror("readv");return now()-t;}
int main(int c,char**v){size_t n=(size_t)atoi(v[1])<<20; int huge=atoi(v[2]);
 char*s=buf(n,huge),*d=buf(n,huge);
 for(int i=0;i<12;i++) printf("%.0f ",rd(d,s,n)); printf("| memcpy:");
 for(int i=0;i<4;i++){double t=now(); memcpy(d,s,n); printf(" %.0f",now()-t);} printf("\n");
}
