"""Chit-chat prefixes for the noisy-question variant of bench/recall.py (`--noisy`): each
question is asked after 60-150 characters of small talk in its own language, the prefix chosen
by a hash of the question (the same prefix every run). Written by hand for issue 36: a long
chatty question should answer as well as its bare question."""

from __future__ import annotations

import re
import zlib

_CJK = re.compile("[\u4e00-\u9fff]")

EN = (
    "Hey there! I hope your week has been going well so far, mine has been pretty busy. "
    "Anyway, quick question: ",
    "Good morning! The weather here is lovely today and I just finished my coffee on the "
    "balcony. I was wondering, ",
    "Sorry to bother you again, I know I keep asking things, but something came up while I "
    "was cleaning the kitchen. ",
    "Okay so this might sound random, but I was lying awake last night thinking about all "
    "sorts of things and one of them was this: ",
    "Hi! Hope you slept well. I have a bunch of errands to run later, but before I forget, "
    "let me ask you something. ",
    "Ugh, what a long day. Traffic was terrible and the meeting ran over by an hour. "
    "Anyway, can you help me remember: ",
    "You know how sometimes a thought just pops into your head out of nowhere? That happened "
    "to me this afternoon. ",
    "Hello again, friend. I was scrolling through old messages and got curious. Tell me, ",
    "Before we get started on anything else today, there is one little thing I really want "
    "to check with you, if that's alright: ",
    "So my sister called me earlier and we chatted for ages about nothing in particular, and "
    "then I realised I wanted to ask: ",
    "Honestly I have been meaning to ask this for a while but kept forgetting. Here goes: ",
    "It's raining again, which means another cozy evening indoors with a blanket and some "
    "tea. While I'm here, ",
    "Quick one, I promise, I'm about to head out the door and the taxi is already waiting "
    "outside: ",
    "Hmm, let me think about how to phrase this properly. I don't want to confuse you, so "
    "I'll just ask it directly. ",
    "Happy Friday! The weekend is almost here and I can't wait to relax a little. Random "
    "question for you though: ",
    "I was chatting with a coworker at lunch and we got into a funny debate, which reminded "
    "me of something. ",
    "Thanks for all your help yesterday, it really made a difference. I have one more thing "
    "on my mind: ",
    "Just got back from a walk around the neighbourhood, the trees are looking beautiful "
    "this time of year. Anyway, ",
    "Not sure if you'll know this off the top of your head, but it's worth a try, right? ",
    "My memory is getting worse every year, I swear. I walked into a room today and forgot "
    "why. Which brings me to this: ",
    "Alright, coffee is brewing and the house is finally quiet for once. Let me ask you "
    "something I've been curious about. ",
    "Hey, hope I'm not interrupting anything important. I had a small question pop up while "
    "I was cooking dinner. ",
    "This is going to be a slightly odd question, so bear with me for a second, okay? ",
    "Morning! I didn't sleep great, the neighbours were loud, but I'm feeling okay now. So "
    "tell me, ",
    "I was tidying up my desk and found a bunch of old notes, which got me thinking. ",
    "Long time no talk! A lot has happened, but we can catch up properly later. For now, ",
    "Let me know if this doesn't make sense, I'm a bit tired and my brain is foggy right now. ",
    "Can I pick your brain for a moment? Something has been bugging me all day long. ",
    "Oh, and one more thing before I forget again, because I always forget these things. ",
    "I'm sitting on the train right now with nothing to do, so I figured I'd ask you this. ",
)

ZH = (
    "哇，今天天气真好，阳光明媚的，我刚从公园散步回来，心情特别愉快，顺便买了一杯咖啡。"
    "我实际想问的是：",
    "你好呀，最近工作实在是太忙了，每天都加班到很晚，回家只想躺着休息。不过有件事我一直想问问你，",
    "早上好！昨晚睡得不太好，楼上邻居一直在装修，吵得我头疼。算了不说这个了，我想请教一下，",
    "嗨，好久没来找你聊天了，这段时间发生了好多事情，以后慢慢跟你讲。现在先问你一个问题，",
    "今天下了一整天的雨，我哪儿也没去，就在家里看书喝茶，感觉还挺惬意的。突然想起一件事，",
    "不好意思又来打扰你了，我知道你可能很忙，但是这个问题我想了很久也没想明白，所以来问问你：",
    "周末终于到了，这周真的好累啊，总算可以好好放松一下了。趁着现在有空，我想问你一下，",
    "刚刚和朋友打了很久的电话，聊了很多有的没的，挂了电话之后我突然想到一个问题，",
    "我今天整理房间的时候翻到了一些旧东西，一下子勾起了很多回忆，让我想问问你，",
    "说起来有点不好意思，我的记性越来越差了，很多事情转头就忘，所以想请你帮我回忆一下，",
    "午饭吃得太饱了，现在有点犯困，趁着还没睡着，赶紧问你一个我一直惦记着的问题：",
    "哈喽，今天心情不错，早上跑了五公里，出了一身汗，感觉整个人都精神了。对了，我想问，",
    "最近天气越来越冷了，出门都要穿好几件衣服，你也要注意保暖哦。言归正传，请问一下，",
    "我正在地铁上，人特别多，挤得要命，闲着也是闲着，就想起来问你一件事情，",
    "嗯，让我想想该怎么说比较清楚，我怕说得太乱你听不懂，那我就直接问了吧，",
    "晚上好呀，刚吃完晚饭，洗完碗坐下来休息一会儿，想跟你聊聊天，顺便问个问题，",
    "你知道吗，有时候脑子里会突然冒出一个念头，怎么都挥之不去，今天下午就是这样，我想知道，",
    "谢谢你上次的帮助，真的帮了我大忙，我一直想找机会跟你道谢。另外我还有一个小问题，",
    "今天在公司开了一上午的会，讨论来讨论去也没有什么结果，真是让人头大。不说工作了，",
    "窗外的鸟叫得特别好听，我泡了一壶茶坐在阳台上发呆，突然想到一个问题想问问你，",
    "这个问题可能有点奇怪，你别介意啊，我就是随便问问，想到了就顺口说出来了，",
    "早啊，今天起得特别早，外面天还没亮透，街上也没什么人，安安静静的。我想问一下，",
    "最近总是觉得时间过得好快，一眨眼一个月又过去了，好多计划都还没完成。说正事吧，",
    "我刚下班回到家，换好衣服躺在沙发上，终于可以歇一口气了。趁现在想起来，问你一下，",
    "前几天和家里人一起吃了顿饭，大家聊得很开心，聊着聊着我就想起一件事来，",
    "有件事情我一直记不太清楚了，想来想去还是问问你比较靠谱，毕竟你记得比我清楚，",
    "好无聊啊，今天什么事都不想做，就想找个人说说话。那我就问你个问题吧，",
    "我在咖啡店里等朋友，她说要迟到半个小时，我只好一个人坐着刷手机，顺便问你，",
    "春天来了，小区里的花都开了，粉的白的一大片，特别漂亮，我拍了好多照片。对了，",
    "先跟你说声抱歉，前两天心情不好，说话可能有点冲，希望你别往心里去。我想问的是，",
)

# Small talk said before a Chinese prefix: a Chinese prefix alone is 34-49 characters
ZH_TALK = (
    "我家的小猫今天早上把花瓶打碎了，我收拾了好半天才弄干净。",
    "楼下新开了一家面包店，闻着特别香，我忍不住买了两个菠萝包。",
    "这几天一直在追一部电视剧，剧情特别吸引人，每天都熬夜看。",
    "最近在学做饭，昨天第一次做了红烧肉，味道居然还挺不错的呢。",
    "今天出门忘带伞，结果半路下起了大雨，浑身上下都淋得湿透了。",
    "我最近迷上了拼图，一千片的那种，已经断断续续拼了一大半了。",
    "早上在小区里遇到了一只很可爱的小狗，一直摇着尾巴跟着我走。",
    "手机屏幕昨天摔裂了，还得抽时间去店里换一块新的屏幕。",
    "这周末打算去郊外爬山，听说山上的风景特别好看，空气也好。",
    "我妈妈今天给我寄了一箱家乡的水果，又甜又新鲜，吃都吃不完。",
    "昨天晚上看了一场电影，散场的时候已经快到半夜十二点了。",
)


def noisy(question: str) -> str:
    """`question` after a chit-chat prefix in its language (Chinese when it holds a Han
    character), the same prefix for the same question on every run."""
    h = zlib.crc32(question.encode("utf-8"))
    if not _CJK.search(question):
        return EN[h % len(EN)] + question
    return ZH_TALK[h // len(ZH) % len(ZH_TALK)] + ZH[h % len(ZH)] + question
